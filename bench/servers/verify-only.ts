// (b) Our edge's verification path alone: the same app factory, with an in-memory sink.
import { serve } from "@hono/node-server";
import { createApp } from "../../src/http/app.js";
import { createLogger } from "../../src/logging/logger.js";
import type { EventSink } from "../../src/queue/ingest-stream.js";
import { BENCH_SECRET } from "../lib/pool.js";

let n = 0;
const sink: EventSink = {
  enqueue: () => Promise.resolve({ jobId: String(++n), duplicate: false }),
  ping: () => Promise.resolve(),
};
const logger = createLogger({ level: process.env.LOG_LEVEL ?? "info", secrets: [BENCH_SECRET] });
const app = createApp({ logger, ready: () => sink.ping(), webhooks: { sink, signingSecrets: [BENCH_SECRET], maxBodyBytes: 1024 * 1024 } });
serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, (info) => console.error(`READY http://127.0.0.1:${info.port}`));
for (const s of ["SIGINT", "SIGTERM"] as const) process.once(s, () => process.exit(0));
