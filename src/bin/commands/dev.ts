import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { loadConfig, newestSigningSecret, secretsOf } from "../../config/index.js";
import { ensureRedis } from "../../local/ensure-redis.js";
import { createLogger } from "../../logging/logger.js";
import { prettyDestinationForTerminal } from "../../logging/pretty-destination.js";
import { createSandbox } from "../../sandbox/index.js";
import { createService } from "../../service.js";
import { traceLogFields } from "../../tracing/log-correlation.js";
import { startTracing } from "../../tracing/start-tracing.js";
import { loadHandlersModule } from "../../worker/load-handlers-module.js";
import { UsageError } from "../usage-error.js";

export const help = `svc-webhooks dev [--port <n>] [--sandbox-port <n>] [--interval-ms <n>] [--no-simulate]

The whole local stack in one process, for development and demos:
  1. Redis: REDIS_URL when it answers, else a redis-server of its own (AOF on, in a temp dir)
  2. the sandbox (a local upstream API) with live simulated traffic
  3. the service (edge and worker), registered as the sandbox's webhook subscriber
Prints where to look; Ctrl-C stops all of it.
  --port           the service's port (default PORT or 3000)
  --sandbox-port   the sandbox's port (default 4010)
  --interval-ms    one simulated change every n ms (default 1000)
  --no-simulate    no simulated traffic (use \`svc-webhooks trigger\` or the sandbox's /_sandbox routes)`;

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      port: { type: "string" },
      "sandbox-port": { type: "string" },
      "interval-ms": { type: "string" },
      "no-simulate": { type: "boolean" },
    },
  });
  const intervalMs = Number(values["interval-ms"] ?? 1000);
  if (!Number.isInteger(intervalMs) || intervalMs < 10) throw new UsageError("--interval-ms must be a whole number ≥ 10");

  const redis = await ensureRedis(process.env.REDIS_URL);
  // Local secrets for this run only; nothing here is a production secret. SIGNING_SECRET may be a
  // rotation list: the service accepts each secret, the sandbox signs with the newest (the first).
  const signingSecrets = process.env.SIGNING_SECRET ?? `whsec_dev_${randomBytes(12).toString("hex")}`;
  const signingSecret = newestSigningSecret(signingSecrets);
  if (!signingSecret) throw new UsageError("SIGNING_SECRET must be a comma-separated list of non-empty secrets, the newest first");
  const adminToken = process.env.ADMIN_TOKEN ?? `dev-admin-${randomBytes(12).toString("hex")}`;
  // A person reads these: pretty lines on a terminal (secrets are scrubbed before they are formatted).
  const destination = await prettyDestinationForTerminal();
  // Debug by default: a person watching the local stack wants a line per accepted delivery,
  // which production logs at debug (see http/request-log.ts).
  const logLevel = process.env.LOG_LEVEL ?? "debug";
  const devLogger = createLogger({
    level: logLevel,
    secrets: [...signingSecrets.split(",").map((s) => s.trim()), adminToken],
    destination,
  });

  const sandbox = createSandbox({
    simulate: values["no-simulate"] ? false : { intervalMs },
    logger: devLogger.child({ component: "sandbox" }),
  });
  const sandboxUrl = await sandbox.listen({ port: Number(values["sandbox-port"] ?? 4010) });

  const config = loadConfig({
    ...process.env,
    ROLE: "all",
    REDIS_URL: redis.url,
    // The redis-server dev starts for itself is a single node, whatever REDIS_CLUSTER said.
    REDIS_CLUSTER: redis.started ? "false" : process.env.REDIS_CLUSTER,
    SIGNING_SECRET: signingSecrets,
    ADMIN_TOKEN: adminToken,
    API_BASE_URL: sandboxUrl,
    API_KEY: sandbox.apiKey,
    PORT: values.port ?? process.env.PORT ?? "3000",
    RECONCILE_INTERVAL_SECONDS: process.env.RECONCILE_INTERVAL_SECONDS ?? "300",
    LOG_LEVEL: logLevel,
  });
  // As `serve`: traces to a local collector (e.g. Jaeger's OTLP port) when OTEL_EXPORTER_OTLP_ENDPOINT is set.
  const tracing = await startTracing(process.env);
  const logger = createLogger({
    level: config.logLevel,
    secrets: secretsOf(config),
    destination,
    ...(tracing ? { mixin: traceLogFields } : {}),
  });
  const handlers = config.handlersModule ? [await loadHandlersModule(config.handlersModule)] : [];
  const service = await createService({ config, logger, handlers, tracing });
  const url = await service.start();
  sandbox.addWebhook({ url: `${url}/webhooks`, secret: signingSecret });

  process.stderr.write(
    [
      "",
      "svc-webhooks local stack is up",
      `  webhook endpoint   POST ${url}/webhooks   (the sandbox delivers here)`,
      `  queue dashboard    ${url}/admin/queues    (user: any, password: the admin token below)`,
      `  mirror             ${url}/mirror/orders?restaurantId=rest_1`,
      `  metrics            ${url}/metrics`,
      `  admin token        ${adminToken}  (local, generated for this run; set ADMIN_TOKEN to choose)`,
      `  sandbox API        ${sandboxUrl}/api/v1   state: ${sandboxUrl}/_sandbox/state`,
      `  redis              ${redis.url}${redis.started ? " (started for this run)" : ""}`,
      `  signing secret     ${signingSecret}  (the sandbox signs with it; set SIGNING_SECRET to choose)`,
      `  try                SIGNING_SECRET=${signingSecret} npm run cli -- trigger review.created --url ${url}/webhooks`,
      `                     curl -H "Authorization: Bearer ${adminToken}" ${url}/mirror/reviews?restaurantId=rest_1`,
      "Ctrl-C stops everything.",
      "",
    ].join("\n"),
  );

  let stopping = false;
  const stop = async () => {
    // The service first, so no refresh job is cut off by its upstream vanishing mid-request.
    await service.stop();
    await tracing?.shutdown();
    await sandbox.close();
    await redis.started?.destroy();
    logger.flush();
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    // `on`, not `once`: Ctrl-C reaches this process twice (from the terminal's process group and
    // forwarded by tsx); the second must not kill it before the database is closed.
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      stop().then(
        () => (process.exitCode = 0),
        (err: unknown) => {
          console.error(err);
          process.exitCode = 1;
        },
      );
    });
  }
}
