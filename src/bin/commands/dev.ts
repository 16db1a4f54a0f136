import { parseArgs } from "node:util";
import { loadConfig, newestSigningSecret, secretsOf } from "../../config/config.js";
import { ensureRedis } from "../../redis/local-server.js";
import { createLogger, prettyDestinationForTerminal } from "../../logging/logger.js";
import { createSandbox, type Sandbox, type SandboxOptions } from "../../sandbox/index.js";
import { SandboxStateFileError } from "../../sandbox/state-file.js";
import { createService } from "../../service.js";
import { traceLogFields, startTracing } from "../../tracing/tracing.js";
import { loadHandlersModule } from "../../worker/handlers.js";
import { existsSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { lockDataDir } from "../../mirror/database.js";
import { isApiKey } from "../../upstream/client.js";
import { CommandError } from "../command-error.js";
import { UsageError } from "../usage-error.js";
import { devBanner } from "../dev-banner.js";
import { showBannerOnEnter } from "../dev-banner-key.js";
import { watchHandlersModule } from "../dev-handlers-reload.js";
import { devSettings } from "../dev-settings.js";
import { stopped } from "../stop-signals.js";

export const help = `svc-webhooks dev [--port <n>] [--sandbox-port <n>] [--interval-ms <n>] [--no-simulate] [--fresh] [--verbose]

The whole local stack in one process, for development and demos:
  1. Redis: REDIS_URL when it answers, else a redis-server of its own (AOF on, in a temp dir)
  2. the sandbox (a local upstream API) with live simulated traffic
  3. the service (edge and worker), registered as the sandbox's webhook subscriber
Prints where to look (the console at /console) and an \`export …\` block that points the CLI at
this stack; Enter prints it again (on a terminal), Ctrl-C stops all of it. Kept from one run to
the next (in ./.data/dev, or DATA_DIR when set): the embedded database (unless DATABASE_URL), and
in dev-settings.json the generated SIGNING_SECRET and ADMIN_TOKEN (unless set) and the ports of
the service, the sandbox and its own Redis (a port taken since is replaced, and the banner says
so), and the sandbox's records (sandbox-state.json, saved every 10 s and at stop; new records
never reuse an earlier run's id). The sandbox's API key is fixed (DEV_API_KEY).
HANDLERS_MODULE (an ES module) is reloaded when its file changes.
  --port           the service's port (default PORT, else the last run's, else 3000)
  --sandbox-port   the sandbox's port (default the last run's, else 4010)
  --interval-ms    one simulated change every n ms (default 1000)
  --no-simulate    no simulated traffic (use \`svc-webhooks trigger\` or the sandbox's /_sandbox routes)
  --fresh          start over: empty ./.data/dev, make new secrets and ports, seed the sandbox anew
  --verbose        log at debug (a line per accepted delivery); LOG_LEVEL also sets the level`;

export async function run(argv: string[], _env: NodeJS.ProcessEnv, stop: AbortSignal): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      port: { type: "string" },
      "sandbox-port": { type: "string" },
      "interval-ms": { type: "string" },
      "no-simulate": { type: "boolean" },
      fresh: { type: "boolean" },
      verbose: { type: "boolean" },
    },
  });
  const intervalMs = Number(values["interval-ms"] ?? 1000);
  if (!Number.isInteger(intervalMs) || intervalMs < 10) throw new UsageError("--interval-ms must be a whole number ≥ 10");

  const database = await devDatabase(values.fresh ?? false);
  const kept = await devSettings(database.settingsDir, { fresh: values.fresh ?? false });
  const redis = await ensureRedis(process.env.REDIS_URL, kept.settings.ports.redis);
  // Everything started from here on is stopped again if the stack cannot come up: no redis-server
  // (nor sandbox, nor database) is left behind by a failed start.
  const started: { stop(): Promise<void> }[] = [];
  const ownRedis = redis.started;
  if (ownRedis) {
    started.push({ stop: () => ownRedis.destroy() });
    process.stderr.write(`redis-server started at ${redis.url} for this run\n`);
  }
  let stack;
  try {
    stack = await startStack(values, intervalMs, { redis, database, kept }, started);
  } catch (err) {
    for (const part of started.reverse()) await part.stop().catch(() => undefined);
    throw err;
  }
  await stayUp(stack, started, stop);
}

/** The fixed API key of the dev stack's sandbox: the same every run, so an exported API_KEY stays valid. */
export const DEV_API_KEY = "svc_live_dev_sandbox_key_not_secret";
/** The dev stack's own embedded database and settings, kept across runs (emptied by --fresh). */
export const DEV_DATA_DIR = "./.data/dev";

interface DevFlags {
  fresh?: boolean;
  port?: string;
  "sandbox-port"?: string;
  "no-simulate"?: boolean;
  verbose?: boolean;
}

interface DevStart {
  redis: Awaited<ReturnType<typeof ensureRedis>>;
  database: Awaited<ReturnType<typeof devDatabase>>;
  kept: Awaited<ReturnType<typeof devSettings>>;
}

async function startStack(values: DevFlags, intervalMs: number, { redis, database, kept }: DevStart, started: { stop(): Promise<void> }[]) {
  const { settings } = kept;
  // SIGNING_SECRET may be a rotation list: the service accepts each secret, the sandbox signs with the newest (the first).
  const signingSecrets = process.env.SIGNING_SECRET ?? settings.signingSecret;
  const signingSecret = newestSigningSecret(signingSecrets);
  if (!signingSecret) throw new UsageError("SIGNING_SECRET must be a comma-separated list of non-empty secrets, the newest first");
  const adminToken = process.env.ADMIN_TOKEN ?? settings.adminToken;
  const apiKey = process.env.API_KEY && isApiKey(process.env.API_KEY) ? process.env.API_KEY : DEV_API_KEY;
  // A person reads these: pretty lines on a terminal (secrets are scrubbed before they are formatted).
  const destination = await prettyDestinationForTerminal();
  // Info by default, so the banner's advice is not scrolled away; --verbose adds a line per
  // accepted delivery, which production logs at debug (see http/request-log.ts).
  const logLevel = values.verbose ? "debug" : (process.env.LOG_LEVEL ?? "info");
  const devLogger = createLogger({
    level: logLevel,
    secrets: [...signingSecrets.split(",").map((s) => s.trim()), adminToken],
    destination,
  });

  const sandbox = devSandbox({
    apiKeys: [apiKey],
    simulate: values["no-simulate"] ? false : { intervalMs },
    // Kept beside the settings, so the mirror kept in the database and the sandbox agree after a restart.
    keep: { dir: database.settingsDir, fresh: values.fresh ?? false },
    logger: devLogger.child({ component: "sandbox" }),
  });
  const sandboxUrl = await listenOn("the sandbox", values["sandbox-port"] ?? settings.ports.sandbox, (port) => sandbox.listen({ port }));
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
    PORT: values.port ?? process.env.PORT ?? String(settings.ports.service),
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
  const { handlersModule } = config;
  const worker = service.worker;
  if (handlersModule && worker) {
    const watching = watchHandlersModule({ path: handlersModule, apply: (map) => worker.reloadHandlers([map]), logger });
    started.push({
      stop: () => {
        watching.stop();
        return Promise.resolve();
      },
    });
  }

  const fromEnv = (["SIGNING_SECRET", "ADMIN_TOKEN"] as const).filter((name) => process.env[name] !== undefined);
  const used = { service: !values.port && !process.env.PORT, sandbox: !values["sandbox-port"], redis: redis.started !== undefined };
  const printBanner = () =>
    process.stderr.write(
      devBanner({
        url,
        sandboxUrl,
        redis,
        adminToken,
        signingSecret,
        apiKey,
        secrets: secretsNote(kept, fromEnv),
        database: database.note,
        queuePrefix: config.queuePrefix,
        ...(config.database.url ? {} : { dataDir: resolve(config.database.dataDir) }),
        notes: kept.moved
          .filter(({ what }) => used[what])
          .map(({ what, from, to }) => `the last run's ${what} port ${from} is taken: ${to} now (saved for the next run)`),
        // Typed boolean, but undefined when stdin is a pipe or closed.
        onEnter: (process.stdin.isTTY as boolean | undefined) === true,
      }),
    );
  printBanner();
  if (process.stdin.isTTY) {
    const stopListening = showBannerOnEnter(process.stdin, printBanner);
    started.push({
      stop: () => {
        stopListening();
        return Promise.resolve();
      },
    });
  }
  return { logger };
}

function secretsNote({ file, created }: { file: string; created: boolean }, fromEnv: readonly string[]): string {
  const generated = ["SIGNING_SECRET", "ADMIN_TOKEN"].filter((name) => !fromEnv.includes(name));
  if (generated.length === 0) return "SIGNING_SECRET and ADMIN_TOKEN as set";
  return `${generated.join(" and ")} ${created ? "generated now" : "kept from the last run"} in ${file} (set them to choose; --fresh for new ones)`;
}

/**
 * The dev stack's database: DATABASE_URL or DATA_DIR as given, else its own embedded one under
 * DEV_DATA_DIR, kept across runs so the event being debugged is still there after a restart
 * (emptied by --fresh). The sandbox keeps its records beside it, so the mirror's records agree.
 */
async function devDatabase(fresh: boolean): Promise<{ env: Record<string, string>; note: string; settingsDir: string }> {
  const dataDir = process.env.DATA_DIR;
  const settingsDir = dataDir && !dataDir.startsWith("memory://") ? dataDir : DEV_DATA_DIR;
  // Refused while another dev stack runs there (DataDirLockedError): its database and its settings
  // (ports it holds would read as taken) are neither emptied nor rewritten under it.
  if (existsSync(settingsDir)) (await lockDataDir(settingsDir)).release();
  if (process.env.DATABASE_URL) return { env: {}, note: "DATABASE_URL (kept; --fresh does not empty it)", settingsDir };
  if (dataDir) return { env: {}, note: `${dataDir} (kept; --fresh does not empty it)`, settingsDir };
  const note = `embedded in ${DEV_DATA_DIR}, kept across runs (--fresh empties it)`;
  if (!fresh) return { env: { DATA_DIR: DEV_DATA_DIR }, note, settingsDir };
  rmSync(DEV_DATA_DIR, { recursive: true, force: true });
  return { env: { DATA_DIR: DEV_DATA_DIR }, note: `embedded in ${DEV_DATA_DIR}, emptied by --fresh`, settingsDir };
}

/** The dev stack's sandbox; a kept state it cannot read becomes one line pointing at --fresh. */
function devSandbox(options: SandboxOptions): Sandbox {
  try {
    return createSandbox(options);
  } catch (err) {
    if (err instanceof SandboxStateFileError) throw new CommandError(`${err.message}; start with --fresh to start the sandbox over`);
    throw err;
  }
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

/** Until the first signal (cli-main.ts: SIGHUP too, so a closed terminal leaves no redis-server behind); then stops it all. */
async function stayUp({ logger }: { logger: { flush(): void } }, started: { stop(): Promise<void> }[], stop: AbortSignal): Promise<void> {
  await stopped(stop);
  try {
    // The service first (last started), so no refresh job is cut off by its upstream vanishing mid-request.
    for (const part of [...started].reverse()) await part.stop();
    process.exitCode = 0;
  } finally {
    logger.flush();
  }
}
