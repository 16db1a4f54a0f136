// (f) The Hono "tutorial" receiver: Hono + createHmac/timingSafeEqual + JSON.parse + one
// `await queue.add(type, event, { jobId: event.id })` per request.
import { createHmac, timingSafeEqual } from "node:crypto";
import { serve } from "@hono/node-server";
import { Queue } from "bullmq";
import { Hono } from "hono";
import { Redis } from "ioredis";
import { EVENTS_QUEUE } from "../../src/queue/events-queue.js";
import { BENCH_SECRET } from "../lib/pool.js";

const connection = new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: 1 });
const queue = new Queue(EVENTS_QUEUE, { connection, prefix: process.env.QUEUE_PREFIX! });
// An "error" event without a listener would throw; a failed add answers 503 below.
queue.on("error", () => undefined);
const app = new Hono();
app.post("/webhooks", async (c) => {
  const body = Buffer.from(await c.req.arrayBuffer());
  const header = Buffer.from(c.req.header("x-svc-signature") ?? "");
  const expected = Buffer.from("sha256=" + createHmac("sha256", BENCH_SECRET).update(body).digest("hex"));
  if (header.length !== expected.length || !timingSafeEqual(header, expected)) return c.json({ error: "bad signature" }, 401);
  const event = JSON.parse(body.toString("utf8")) as { id: string; type: string };
  try {
    await queue.add(event.type, event, { jobId: event.id });
    return c.json({ received: true });
  } catch {
    return c.json({ error: "queue unavailable" }, 503);
  }
});
serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, (info) => console.error(`READY http://127.0.0.1:${info.port}`));
for (const s of ["SIGINT", "SIGTERM"] as const) process.once(s, () => process.exit(0));
