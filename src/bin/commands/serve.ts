import { parseArgs } from "node:util";
import { loadConfig, secretsOf } from "../../config/config.js";
import { createLogger } from "../../logging/logger.js";
import { createService } from "../../service.js";
import { traceLogFields, startTracing } from "../../tracing/tracing.js";
import { loadHandlersModule } from "../../worker/load-handlers-module.js";

export const help = `svc-webhooks serve [--role all|web|worker]

Starts the service from the environment (see the README's configuration table).
  --role   overrides ROLE: all (edge and worker, default), web (edge only), worker (worker only)
Stops gracefully on SIGTERM or SIGINT: stops accepting, finishes in-flight work, closes Redis.`;

/** How long past SHUTDOWN_TIMEOUT_MS the close steps after the workers may take in all before the process exits anyway. */
const EXIT_GRACE_MS = 10_000;

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { role: { type: "string" } }, strict: true });
  const config = loadConfig({ ...process.env, ...(values.role ? { ROLE: values.role } : {}) });
  // Before anything that traces is built; undefined (nothing loaded) without an OTLP endpoint.
  const tracing = await startTracing(process.env);
  const logger = createLogger({ level: config.logLevel, secrets: secretsOf(config), ...(tracing ? { mixin: traceLogFields } : {}) });
  const handlers = config.handlersModule ? [await loadHandlersModule(config.handlersModule)] : [];
  const service = await createService({ config, logger, handlers, tracing });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    // Every close step has its own deadline; this one is the last word, so a supervisor never has
    // to SIGKILL (whatever is still pending then is a connection to something that is gone).
    const hardStop = setTimeout(() => {
      logger.warn({ afterMs: config.shutdownTimeoutMs + EXIT_GRACE_MS }, "shutdown did not finish in time; exiting");
      logger.flush();
      process.exit(1);
    }, config.shutdownTimeoutMs + EXIT_GRACE_MS).unref();
    service
      .stop()
      // The spans of the last deliveries are exported before the process exits.
      .then(() => tracing?.shutdown())
      .then(() => {
        logger.info("stopped");
        logger.flush();
        process.exitCode = 0;
      })
      .catch((err: unknown) => {
        logger.error({ err }, "shutdown failed");
        logger.flush();
        process.exitCode = 1;
      })
      // A reconnect timer of a client that is gone must not keep a stopped process alive.
      .finally(() => {
        clearTimeout(hardStop);
        process.exit();
      });
  };
  // Handlers go in before start: "listening" is written while start() is still returning, and a
  // supervisor that reads it and sends SIGTERM at once must not meet Node's default (die at once).
  // A signal during start is kept and acted on once start is done; a start that cannot finish
  // (it waits for a Redis that never answers) ends the process at SHUTDOWN_TIMEOUT_MS instead.
  let started = false;
  let pending: string | undefined;
  let startStop: NodeJS.Timeout | undefined;
  const onSignal = (signal: string) => {
    if (started) {
      shutdown(signal);
      return;
    }
    pending ??= signal;
    startStop ??= setTimeout(() => {
      logger.warn({ signal }, "stopped before the start finished (it waits for Redis or the database): exiting");
      logger.flush();
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
  };
  process.once("SIGTERM", () => onSignal("SIGTERM"));
  process.once("SIGINT", () => onSignal("SIGINT"));
  await service.start();
  started = true;
  clearTimeout(startStop);

  if (pending) shutdown(pending);
}
