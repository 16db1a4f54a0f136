import { setFlagsFromString } from "node:v8";
import type { DestinationStream } from "pino";
import { type Config, loadConfig, ROLES, secretsOf } from "../config/config.js";
import { createLogger } from "../logging/logger.js";
import { deadlineIn } from "../base/deadline.js";
import { createService, EXIT_GRACE_MS } from "../service.js";
import { traceLogFields, startTracing } from "../tracing/tracing.js";
import { loadHandlersModule } from "../worker/handlers.js";
import { parseFlags, stopped } from "./command.js";

export const help = `svc-webhooks serve [--role ${ROLES.join("|")}]

Starts the service from the environment (see the README's configuration table).
  --role   overrides ROLE: all (edge and worker, default), web (edge only), worker (worker only)
Stops gracefully on SIGTERM or SIGINT: stops accepting, finishes in-flight work by
SHUTDOWN_TIMEOUT_MS, closes Redis and the database, and exits at most 5 s past it.`;

export async function run(argv: string[], env: NodeJS.ProcessEnv, stop: AbortSignal): Promise<void> {
  const { values } = parseFlags({ args: argv, options: { role: { type: "string" } }, strict: true });
  const config = loadConfig({ ...env, ...(values.role ? { ROLE: values.role } : {}) });
  const { service, logger, tracing } = await serviceFromConfig(config);
  const exit = (code: number, message: string, fields: object = {}) => {
    logger.warn(fields, message);
    logger.flush();
    process.exit(code);
  };
  // The signal handlers are in place before start (cli.ts): "listening" is written while
  // start() is still returning, and a supervisor that reads it and sends SIGTERM at once must not
  // meet Node's default (die at once). A start cannot be cut (it waits for Redis or the
  // database): a signal during it is acted on once it is done, or ends the process at
  // SHUTDOWN_TIMEOUT_MS if it is not done by then.
  let startTimer: NodeJS.Timeout | undefined;
  const onEarlyStop = () =>
    (startTimer = setTimeout(
      () => exit(1, "stopped before the start finished (it waits for Redis or the database): exiting"),
      config.shutdownTimeoutMs,
    ).unref());
  stop.addEventListener("abort", onEarlyStop, { once: true });
  await service.start();
  stop.removeEventListener("abort", onEarlyStop);
  clearTimeout(startTimer);

  const { signal, at } = await stopped(stop);
  logger.info({ signal }, "shutting down");
  // One deadline from the signal for every part (service.ts); this timer is the last word, so
  // a supervisor never has to SIGKILL (whatever is still pending then is a connection to
  // something that is gone).
  const drain = deadlineIn(config.shutdownTimeoutMs, at);
  const hardStop = setTimeout(
    () => exit(1, "shutdown did not finish in time; exiting", { afterMs: config.shutdownTimeoutMs + EXIT_GRACE_MS }),
    Math.max(0, drain.at + EXIT_GRACE_MS - Date.now()),
  ).unref();
  try {
    await service.stop(drain);
    // The spans of the last deliveries are exported before the process exits.
    await tracing?.shutdown();
    logger.info("stopped");
    process.exitCode = 0;
  } catch (err) {
    logger.error({ err }, "shutdown failed");
    process.exitCode = 1;
  } finally {
    clearTimeout(hardStop);
    logger.flush();
    // A reconnect timer of a client that is gone must not keep a stopped process alive.
    process.exit();
  }
}

/**
 * The service a config describes, as serve and dev build it: tracing first (before anything that
 * traces is built; undefined, nothing loaded, without an OTLP endpoint), a logger that scrubs the
 * config's secrets, and HANDLERS_MODULE's handlers.
 */
export async function serviceFromConfig(config: Config, destination?: DestinationStream) {
  // How far V8 grows the heap past its live set (HEAP_GROWING_PERCENT). A process-wide setting, so
  // it is the command's to make, not the service factory's (tests build many services in one process).
  // V8 reads it at each full collection, so setting it as the process starts takes effect.
  if (config.heapGrowingPercent > 0) setFlagsFromString(`--heap-growing-percent=${config.heapGrowingPercent}`);
  const tracing = await startTracing(config.tracing);
  try {
    const logger = createLogger({
      level: config.logLevel,
      secrets: secretsOf(config),
      ...(destination ? { destination } : {}),
      ...(tracing ? { mixin: traceLogFields } : {}),
    });
    const handlers = config.handlersModule ? [await loadHandlersModule(config.handlersModule)] : [];
    return { service: await createService({ config, logger, handlers, tracing }), logger, tracing };
  } catch (err) {
    await tracing?.shutdown();
    throw err;
  }
}
