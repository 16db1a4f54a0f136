// (e) A peer users would write from octokit's docs: node:http + @octokit/webhooks-methods `verify`
// + one `await queue.add(type, event, { jobId: event.id })` per request.
import { createServer } from "node:http";
import { verify } from "@octokit/webhooks-methods";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { EVENTS_QUEUE } from "../../src/queue/events-queue.js";
import { BENCH_SECRET } from "../lib/pool.js";

const connection = new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: 1 });
const queue = new Queue(EVENTS_QUEUE, { connection, prefix: process.env.QUEUE_PREFIX! });
// An "error" event without a listener would throw; a failed add answers 503 below.
queue.on("error", () => undefined);
const server = createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/webhooks") return void res.writeHead(404).end();
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => void answer());
  async function answer() {
    const payload = Buffer.concat(chunks).toString("utf8");
    const signature = String(req.headers["x-svc-signature"] ?? "");
    if (!signature || !(await verify(BENCH_SECRET, payload, signature))) return void res.writeHead(401).end("bad signature");
    const event = JSON.parse(payload) as { id: string; type: string };
    try {
      await queue.add(event.type, event, { jobId: event.id });
      res.writeHead(200, { "content-type": "application/json" }).end('{"received":true}');
    } catch {
      res.writeHead(503).end("queue unavailable");
    }
  }
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  console.error(`READY http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`);
});
for (const s of ["SIGINT", "SIGTERM"] as const) process.once(s, () => process.exit(0));
