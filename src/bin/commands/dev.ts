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
import { existsSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { lockDataDir } from "../../mirror/data-dir-lock.js";
import { isApiKey } from "../../upstream/api-key.js";
import { CommandError } from "../command-error.js";
import { UsageError } from "../usage-error.js";

export const help = `svc-webhooks dev [--port <n>] [--sandbox-port <n>] [--interval-ms <n>] [--no-simulate]

The whole local stack in one process, for development and demos:
  1. Redis: REDIS_URL when it answers, else a redis-server of its own (AOF on, in a temp dir)
  2. the sandbox (a local upstream API) with live simulated traffic
  3. the service (edge and worker), registered as the sandbox's webhook subscriber
Prints where to look (the console at /console) and an \`export …\` block that points the CLI at
this stack; Ctrl-C stops all of it. SIGNING_SECRET and ADMIN_TOKEN are generated unless set; the
sandbox's API key is fixed (DEV_API_KEY). Without DATABASE_URL or DATA_DIR the stack uses its own
embedded database in ./.data/dev and empties it at each start, as the sandbox is re-seeded.
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
  // Everything started from here on is stopped again if the stack cannot come up: no redis-server
  // (nor sandbox, nor database) is left behind by a failed start.
  const started: { stop(): Promise<void> }[] = [];
  const ownRedis = redis.started;
  if (ownRedis) {
    started.push({ stop: () => ownRedis.destroy() });
    process.stderr.write(`redis-server started at ${redis.url} for this run\n`);
  }
  try {
    const stack = await startStack(values, intervalMs, redis, started);
    stayUp(stack, started);
  } catch (err) {
    for (const part of started.reverse()) await part.stop().catch(() => undefined);
    throw err;
  }
}

/** The fixed API key of the dev stack's sandbox: the same every run, so an exported API_KEY stays valid. */
export const DEV_API_KEY = "svc_live_dev_sandbox_key_not_secret";
/** The dev stack's own embedded database, emptied at each start (the sandbox is re-seeded too). */
export const DEV_DATA_DIR = "./.data/dev";

interface DevFlags {
  port?: string;
  "sandbox-port"?: string;
  "no-simulate"?: boolean;
}

async function startStack(
  values: DevFlags,
  intervalMs: number,
  redis: Awaited<ReturnType<typeof ensureRedis>>,
  started: { stop(): Promise<void> }[],
) {
  // Local secrets for this run only; nothing here is a production secret. SIGNING_SECRET may be a
  // rotation list: the service accepts each secret, the sandbox signs with the newest (the first).
  const generated: string[] = [];
  const signingSecrets = process.env.SIGNING_SECRET ?? (generated.push("SIGNING_SECRET"), `whsec_dev_${randomBytes(12).toString("hex")}`);
  const signingSecret = newestSigningSecret(signingSecrets);
  if (!signingSecret) throw new UsageError("SIGNING_SECRET must be a comma-separated list of non-empty secrets, the newest first");
  const adminToken = process.env.ADMIN_TOKEN ?? (generated.push("ADMIN_TOKEN"), `dev-admin-${randomBytes(12).toString("hex")}`);
  const apiKey = process.env.API_KEY && isApiKey(process.env.API_KEY) ? process.env.API_KEY : DEV_API_KEY;
  const database = await devDatabase();
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
    apiKeys: [apiKey],
    simulate: values["no-simulate"] ? false : { intervalMs },
    logger: devLogger.child({ component: "sandbox" }),
  });
  const sandboxUrl = await listenOn("the sandbox", values["sandbox-port"] ?? "4010", (port) => sandbox.listen({ port }));
  started.push({ stop: () => sandbox.close() });

  const config = loadConfig({
    ...process.env,
    ...database.env,
    ROLE: "all",
    REDIS_URL: redis.url,
    // The redis-server dev starts for itself is a single node, whatever REDIS_CLUSTER said.
    REDIS_CLUSTER: redis.started ? "false" : process.env.REDIS_CLUSTER,
    SIGNING_SECRET: signingSecrets,
    ADMIN_TOKEN: adminToken,
    API_BASE_URL: sandboxUrl,
    API_KEY: apiKey,
    PORT: values.port ?? process.env.PORT ?? "3000",
    RECONCILE_INTERVAL_SECONDS: process.env.RECONCILE_INTERVAL_SECONDS ?? "300",
    LOG_LEVEL: logLevel,
  });
  // As `serve`: traces to a local collector (e.g. Jaeger's OTLP port) when OTEL_EXPORTER_OTLP_ENDPOINT is set.
  const tracing = await startTracing(process.env);
  if (tracing) started.push({ stop: () => tracing.shutdown() });
  const logger = createLogger({
    level: config.logLevel,
    secrets: secretsOf(config),
    destination,
    ...(tracing ? { mixin: traceLogFields } : {}),
  });
  const handlers = config.handlersModule ? [await loadHandlersModule(config.handlersModule)] : [];
  const service = await createService({ config, logger, handlers, tracing });
  started.push({ stop: () => service.stop() });
  const url = await listenOn("the service", config.port, () => service.start());
  sandbox.addWebhook({ url: `${url}/webhooks`, secret: signingSecret });

  process.stderr.write(
    devBanner({
      url,
      sandboxUrl,
      redis,
      adminToken,
      signingSecret,
      apiKey,
      generated,
      database: database.note,
      queuePrefix: config.queuePrefix,
      ...(config.database.url ? {} : { dataDir: resolve(config.database.dataDir) }),
    }),
  );
  return { logger };
}

/** What the dev stack prints once it is up: where to look, and the environment that reaches it. */
export function devBanner(b: {
  url: string;
  sandboxUrl: string;
  redis: { url: string; started?: unknown };
  adminToken: string;
  signingSecret: string;
  apiKey: string;
  generated: string[];
  database: string;
  queuePrefix: string;
  /** The embedded database's directory: the CLI finds the stack's store (and that the stack holds it) there. */
  dataDir?: string;
}): string {
  const generated = b.generated.length > 0 ? `${b.generated.join(" and ")} generated for this run (set them to choose)` : "none generated";
  return [
    "",
    "svc-webhooks local stack is up",
    `  console            ${b.url}/console        (user: any, password: the ADMIN_TOKEN below)`,
    `  webhook endpoint   POST ${b.url}/webhooks   (the sandbox delivers here)`,
    `  queue dashboard    ${b.url}/admin/queues`,
    `  mirror             ${b.url}/mirror/orders?restaurantId=rest_1`,
    `  metrics            ${b.url}/metrics`,
    `  sandbox API        ${b.sandboxUrl}/api/v1   state: ${b.sandboxUrl}/_sandbox/state`,
    `  redis              ${b.redis.url}${b.redis.started ? " (started for this run)" : ""}`,
    `  database           ${b.database}`,
    `  secrets            ${generated}; the sandbox's API key is fixed for dev`,
    "",
    "The CLI reaches this stack with (paste into another shell):",
    `  export REDIS_URL=${b.redis.url} QUEUE_PREFIX=${b.queuePrefix} PORT=${new URL(b.url).port}${b.dataDir ? ` DATA_DIR=${b.dataDir}` : ""}`,
    `  export API_BASE_URL=${b.sandboxUrl} API_KEY=${b.apiKey}`,
    `  export ADMIN_TOKEN=${b.adminToken} SIGNING_SECRET=${b.signingSecret}`,
    "then, e.g.:",
    "  npm run cli -- trigger review.created",
    "  npm run cli -- replay --status failed --dry-run",
    "  npm run cli -- replay --id <event-id>",
    "  npm run cli -- reconcile",
    "Ctrl-C stops everything.",
    "",
  ].join("\n");
}

/**
 * The dev stack's database: DATABASE_URL or DATA_DIR as given (kept), else its own embedded one
 * under DEV_DATA_DIR, emptied first: the sandbox is re-seeded every run, and a mirror kept from the
 * last run would contradict it (orders it no longer has, statuses it has not reached).
 */
async function devDatabase(): Promise<{ env: Record<string, string>; note: string }> {
  if (process.env.DATABASE_URL) return { env: {}, note: "DATABASE_URL (kept: its mirror may hold records the re-seeded sandbox does not)" };
  if (process.env.DATA_DIR)
    return { env: {}, note: `${process.env.DATA_DIR} (kept: its mirror may hold records the re-seeded sandbox does not)` };
  // Refused while another dev stack runs on it (DataDirLockedError), so nothing is deleted under it.
  if (existsSync(DEV_DATA_DIR)) (await lockDataDir(DEV_DATA_DIR)).release();
  rmSync(DEV_DATA_DIR, { recursive: true, force: true });
  return { env: { DATA_DIR: DEV_DATA_DIR }, note: `embedded in ${DEV_DATA_DIR}, emptied at each start (as the sandbox is re-seeded)` };
}

/** Starts a listener; a port already taken becomes one line naming it. */
async function listenOn<T>(what: string, port: string | number, start: (port: number) => Promise<T>): Promise<T> {
  try {
    return await start(Number(port));
  } catch (err) {
    if ((err as { code?: string }).code === "EADDRINUSE")
      throw new CommandError(`${what} cannot listen: port ${port} is in use (choose another with --port / --sandbox-port)`);
    throw err;
  }
}

function stayUp({ logger }: { logger: { flush(): void } }, started: { stop(): Promise<void> }[]): void {
  let stopping = false;
  // The service first (last started), so no refresh job is cut off by its upstream vanishing mid-request.
  const stop = async () => {
    for (const part of [...started].reverse()) await part.stop();
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
