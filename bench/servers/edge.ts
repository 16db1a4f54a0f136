// (c) Our full edge: verify + durable enqueue into BullMQ, exactly as `serve --role web` builds it.
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/logging/logger.js";
import { createService } from "../../src/service.js";
import { traceLogFields, startTracing } from "../../src/tracing/tracing.js";
import { BENCH_SECRET } from "../lib/pool.js";

const config = loadConfig({ ...process.env, ROLE: process.env.ROLE ?? "web", HOST: "127.0.0.1", PORT: "0", SIGNING_SECRET: BENCH_SECRET });
// As `serve` does: tracing only with an OTLP endpoint in the environment (row c″), else nothing loaded.
const tracing = await startTracing(config.tracing);
const logger = createLogger({ level: config.logLevel, secrets: [BENCH_SECRET], ...(tracing ? { mixin: traceLogFields } : {}) });
const service = await createService({ config, logger, tracing });
void service.start().then((url) => console.error(`READY ${url}`));
process.on(
  "SIGTERM",
  () =>
    void service
      .stop()
      .then(() => tracing?.shutdown())
      .then(() => process.exit(0)),
);
process.once("SIGINT", () => process.exit(0));
