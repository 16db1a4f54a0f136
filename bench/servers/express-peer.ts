// (d) A typical peer: Express + express.raw + HMAC check + one `await queue.add` per request.
import { createHmac, timingSafeEqual } from "node:crypto";
import { Queue } from "bullmq";
import express from "express";
import { Redis } from "ioredis";
import { EVENTS_QUEUE } from "../../src/queue/events-queue.js";
import { BENCH_SECRET } from "../lib/pool.js";

const connection = new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: 1 });
// The same queue name as ours, so the bench counts its jobs the same way.
const queue = new Queue(EVENTS_QUEUE, { connection, prefix: process.env.QUEUE_PREFIX! });
const app = express();
app.post("/webhooks", express.raw({ type: "*/*", limit: "1mb" }), async (req, res) => {
  const body = req.body as Buffer;
  const header = String(req.headers["x-svc-signature"] ?? "");
  const expected = Buffer.from("sha256=" + createHmac("sha256", BENCH_SECRET).update(body).digest("hex"));
  if (header.length !== expected.length || !timingSafeEqual(Buffer.from(header), expected))
    return res.status(401).json({ error: "bad signature" });
  const event = JSON.parse(body.toString("utf8")) as { id: string; type: string };
  try {
    await queue.add(event.type, event, { jobId: event.id });
    res.json({ received: true });
  } catch {
    res.status(503).json({ error: "queue unavailable" });
  }
});
const server = app.listen(0, "127.0.0.1", () => {
  const address = server.address();
  console.error(`READY http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`);
});
