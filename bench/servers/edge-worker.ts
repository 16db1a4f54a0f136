// Our second half for the end-to-end bench: `serve --role worker` (handlers straight from the ingest stream)
// with a no-op handler for every event, exactly as the service builds it.
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/logging/logger.js";
import { createService } from "../../src/service.js";
import { serveProcessedCount } from "../lib/processed-counter.js";

const counter = serveProcessedCount();
const config = loadConfig({ ...process.env, ROLE: "worker", HOST: "127.0.0.1", PORT: "0", RECONCILE_INTERVAL_SECONDS: "0" });
const service = await createService({
  config,
  logger: createLogger({ level: config.logLevel }),
  handlers: [{ "*": () => Promise.resolve() }],
});
service.worker!.onFinished((e) => {
  if (e.outcome === "completed") counter.completed();
});
void service.start();
process.on("SIGTERM", () => void service.stop().then(() => process.exit(0)));
process.once("SIGINT", () => process.exit(0));
