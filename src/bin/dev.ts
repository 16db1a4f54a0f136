// `svc-webhooks dev`: the whole local stack in one process, with what only it needs: the settings
// kept from one run to the next, the banner, and the reload of HANDLERS_MODULE on an edit.
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, watch, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import type { Readable } from "node:stream";
import type { Logger } from "pino";
import { z } from "zod";
import { configValue, loadConfig, newestSigningSecret, SECRET_LIST_RULE } from "../config/config.js";
import { DEFAULTS } from "../config/defaults.js";
import { ensureRedis, freePort, redisAnswers } from "../redis/local-server.js";
import { createLogger, prettyDestinationForTerminal } from "../logging/logger.js";
import { createSandbox, SANDBOX_SAVE_INTERVAL_MS, SANDBOX_STATE_FILE, type Sandbox, type SandboxOptions } from "../sandbox/index.js";
import { SandboxStateFileError } from "../sandbox/state-file.js";
import { DataDirLockedError, lockDataDir } from "../mirror/embedded-server.js";
import { isApiKey } from "../base/api-key.js";
import { type EventHandlers, loadHandlersModule } from "../worker/handlers.js";
import { CommandError, flagOptions, parseFlags, stopped, UsageError, wholeNumber } from "./command.js";
import { SANDBOX_PORT, SIMULATION_INTERVAL_MS, simulationInterval } from "./sandbox.js";
import { serviceFromConfig } from "./serve.js";

export const help = `svc-webhooks dev [--port <n>] [--sandbox-port <n>] [--redis-port <n>] [--interval-ms <n>] [--no-simulate] [--fresh] [--verbose]

The whole local stack in one process, for development and demos:
  1. Redis: the one at --redis-port, else REDIS_URL when it answers, else a redis-server of its own (AOF on, in a temp dir)
  2. the sandbox (a local upstream API) with live simulated traffic
  3. the service (edge and worker), registered as the sandbox's webhook subscriber
Prints where to look (the console at /console) and an \`export …\` block that points the CLI at
this stack; Enter prints it again (on a terminal), Ctrl-C stops all of it. Kept from one run to
the next (in ./.data/dev, or DATA_DIR when set): the embedded database (unless DATABASE_URL), and
in dev-settings.json the generated SIGNING_SECRET and ADMIN_TOKEN (unless set) and the ports of
the service, the sandbox and its own Redis (a port taken since is replaced, and the banner says
so), and the sandbox's records (${SANDBOX_STATE_FILE}, saved every ${SANDBOX_SAVE_INTERVAL_MS / 1000} s and at stop; new records
never reuse an earlier run's id). The sandbox's API key is fixed (DEV_API_KEY).
HANDLERS_MODULE (an ES module) is reloaded when its file changes.
  --port           the service's port (default PORT, else the last run's, else ${DEFAULTS.port})
  --sandbox-port   the sandbox's port (default the last run's, else ${SANDBOX_PORT})
  --redis-port     the Redis on this port of 127.0.0.1, started there when none answers (default
                   REDIS_URL when it answers, else one of its own on the last run's port)
  --interval-ms    one simulated change every n ms (default ${SIMULATION_INTERVAL_MS})
  --no-simulate    no simulated traffic (use \`svc-webhooks trigger\` or the sandbox's /_sandbox routes)
  --fresh          start over: empty ./.data/dev, make new secrets and ports, seed the sandbox anew
  --verbose        log at debug (a line per accepted delivery); LOG_LEVEL also sets the level`;

export async function run(argv: string[], env: NodeJS.ProcessEnv, stop: AbortSignal): Promise<void> {
  const { values } = parseFlags({
    args: argv,
    strict: true,
    options: flagOptions(["port", "sandbox-port", "redis-port", "interval-ms"], ["no-simulate", "fresh", "verbose"]),
  });
  const intervalMs = simulationInterval(values["interval-ms"]);
  const redisPort = values["redis-port"] === undefined ? undefined : portFlag(values["redis-port"], "--redis-port");

  const database = await devDatabase(env, values.fresh ?? false);
  const kept = await devSettings(database.settingsDir, { fresh: values.fresh ?? false });
  const redis = await devRedis(redisPort, env.REDIS_URL, kept.settings.ports.redis);
  // Everything started from here on is stopped again if the stack cannot come up: no redis-server
  // (nor sandbox, nor database) is left behind by a failed start.
  const started: Started = [];
  const ownRedis = redis.started;
  if (ownRedis) {
    started.push({ stop: () => ownRedis.destroy() });
    process.stderr.write(`redis-server started at ${redis.url} for this run\n`);
  }
  const stack = await startStack(env, values, intervalMs, { redis, database, kept }, started).catch(async (err: unknown) => {
    for (const part of started.reverse()) await Promise.resolve(part.stop()).catch(() => undefined);
    throw err;
  });
  await stayUp(stack, started, stop);
}

/** The fixed API key of the dev stack's sandbox: the same every run, so an exported API_KEY stays valid. */
const DEV_API_KEY = "svc_live_dev_sandbox_key_not_secret";
/** The dev stack's own embedded database and settings, kept across runs (emptied by --fresh). */
const DEV_DATA_DIR = "./.data/dev";

type DevFlags = Partial<Record<"port" | "sandbox-port" | "redis-port", string> & Record<"fresh" | "no-simulate" | "verbose", boolean>>;

/**
 * Dev's log level: LOG_LEVEL, else the service's default (info), so the banner's advice is not
 * scrolled away; --verbose is debug, which adds a line per accepted delivery (http/request-log.ts).
 * docs/configuration.md states it (test/unit/configuration-docs.test.ts holds them equal).
 */
export function devLogLevel(verbose: boolean, env: NodeJS.ProcessEnv): string {
  return verbose ? "debug" : configValue(env, "LOG_LEVEL");
}

/** A port given as a flag: 1 to 65535. */
function portFlag(value: string, flag: string): number {
  const port = wholeNumber(value, flag, 0, 1);
  if (port > 65535) throw new UsageError(`${flag} must be a port from 1 to 65535, not "${value}"`);
  return port;
}

/**
 * The dev stack's Redis. With --redis-port, the one on that port of 127.0.0.1, or a redis-server of
 * its own started there (REDIS_URL is not consulted: the flag chose); else REDIS_URL when it
 * answers, else one of its own on the last run's port (dev-settings.json), so an exported
 * REDIS_URL stays valid.
 */
export async function devRedis(redisPort: number | undefined, envUrl: string | undefined, savedPort: number) {
  if (redisPort === undefined) return ensureRedis(envUrl, savedPort);
  const url = `redis://127.0.0.1:${redisPort}`;
  if (!(await redisAnswers(url)) && !(await portIsFree(redisPort)))
    throw new CommandError(
      `dev's Redis cannot start: port ${redisPort} is in use by something that is not Redis (choose another with --redis-port)`,
    );
  return ensureRedis(url, redisPort);
}

/** What a failed start or the stop stops again, in reverse order. */
type Started = { stop(): Promise<void> | void }[];

interface DevStart {
  redis: Awaited<ReturnType<typeof ensureRedis>>;
  database: Awaited<ReturnType<typeof devDatabase>>;
  kept: Awaited<ReturnType<typeof devSettings>>;
}

async function startStack(
  env: NodeJS.ProcessEnv,
  values: DevFlags,
  intervalMs: number,
  { redis, database, kept }: DevStart,
  started: Started,
) {
  const { settings } = kept;
  // SIGNING_SECRET may be a rotation list: the service accepts each secret, the sandbox signs with the newest (the first).
  const signingSecrets = env.SIGNING_SECRET ?? settings.signingSecret;
  const signingSecret = newestSigningSecret(signingSecrets);
  if (!signingSecret) throw new UsageError(`SIGNING_SECRET ${SECRET_LIST_RULE}, the newest first`);
  const adminToken = env.ADMIN_TOKEN ?? settings.adminToken;
  const apiKey = env.API_KEY && isApiKey(env.API_KEY) ? env.API_KEY : DEV_API_KEY;
  // A person reads these: pretty lines on a terminal (secrets are scrubbed before they are formatted).
  const destination = await prettyDestinationForTerminal();
  const logLevel = devLogLevel(values.verbose === true, env);
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
    ...env,
    ...database.env,
    ROLE: "all",
    REDIS_URL: redis.url,
    // The redis-server dev starts for itself is a single node, whatever REDIS_CLUSTER said.
    REDIS_CLUSTER: redis.started ? "false" : env.REDIS_CLUSTER,
    SIGNING_SECRET: signingSecrets,
    ADMIN_TOKEN: adminToken,
    API_BASE_URL: sandboxUrl,
    API_KEY: apiKey,
    PORT: values.port ?? env.PORT ?? String(settings.ports.service),
    RECONCILE_INTERVAL_SECONDS: env.RECONCILE_INTERVAL_SECONDS ?? "300",
    LOG_LEVEL: logLevel,
  });
  // As `serve`: traces to a local collector (e.g. Jaeger's OTLP port) when OTEL_EXPORTER_OTLP_ENDPOINT is set.
  const { service, logger, tracing } = await serviceFromConfig(config, destination);
  if (tracing) started.push({ stop: () => tracing.shutdown() });
  started.push({ stop: () => service.stop() });
  const url = await listenOn("the service", config.port, () => service.start());
  // So a second dev on this directory can say where this one is (anotherDevRuns).
  saveSettings(kept.file, { ...settings, url });
  sandbox.addWebhook({ url: `${url}/webhooks`, secret: signingSecret });
  const { handlersModule } = config;
  const worker = service.worker;
  if (handlersModule && worker)
    started.push(watchHandlersModule({ path: handlersModule, apply: (map) => worker.reloadHandlers([map]), logger }));

  const used = {
    service: !values.port && !env.PORT,
    sandbox: !values["sandbox-port"],
    redis: redis.started !== undefined && !values["redis-port"],
  };
  const printBanner = () =>
    process.stderr.write(
      devBanner({
        url,
        sandboxUrl,
        sandboxState: join(database.settingsDir, SANDBOX_STATE_FILE),
        redis,
        adminToken,
        signingSecret,
        apiKey,
        secretsKey: config.secretsKey?.toString("base64"),
        secrets: secretsNote(env, kept),
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
  if (process.stdin.isTTY) started.push({ stop: showBannerOnEnter(process.stdin, printBanner) });
  return { logger };
}

/** Where the secrets come from: the environment, else the settings file (generated now or kept). */
function secretsNote(env: NodeJS.ProcessEnv, { file, created }: { file: string; created: boolean }): string {
  const generated = ["SIGNING_SECRET", "ADMIN_TOKEN"].filter((name) => env[name] === undefined);
  if (generated.length === 0) return "SIGNING_SECRET and ADMIN_TOKEN as set";
  return `${generated.join(" and ")} ${created ? "generated now" : "kept from the last run"} in ${file} (set them to choose; --fresh for new ones)`;
}

/**
 * The dev stack's database: DATABASE_URL or DATA_DIR as given, else its own embedded one under
 * DEV_DATA_DIR, kept across runs so the event being debugged is still there after a restart
 * (emptied by --fresh). The sandbox keeps its records beside it, so the mirror's records agree.
 */
async function devDatabase(
  env: NodeJS.ProcessEnv,
  fresh: boolean,
): Promise<{ env: Record<string, string>; note: string; settingsDir: string }> {
  const dataDir = env.DATA_DIR;
  const settingsDir = dataDir === undefined || dataDir === "" ? DEV_DATA_DIR : dataDir;
  // Refused while another dev stack runs there: its database and its settings (ports it holds
  // would read as taken) are neither emptied nor rewritten under it.
  if (existsSync(settingsDir)) {
    try {
      (await lockDataDir(settingsDir)).release();
    } catch (err) {
      throw err instanceof DataDirLockedError ? anotherDevRuns(settingsDir, err.pid) : err;
    }
  }
  if (env.DATABASE_URL) return { env: {}, note: "DATABASE_URL (kept; --fresh does not empty it)", settingsDir };
  if (dataDir) return { env: {}, note: `${dataDir} (kept; --fresh does not empty it)`, settingsDir };
  const note = `embedded in ${DEV_DATA_DIR}, kept across runs (--fresh empties it)`;
  if (!fresh) return { env: { DATA_DIR: DEV_DATA_DIR }, note, settingsDir };
  rmSync(DEV_DATA_DIR, { recursive: true, force: true });
  return { env: { DATA_DIR: DEV_DATA_DIR }, note: `embedded in ${DEV_DATA_DIR}, emptied by --fresh`, settingsDir };
}

/**
 * The one line for a dev started on a directory another process holds: a dev stack (its settings
 * name the URL it listens on) is named with its pid and URL; the lock's own message advises a
 * production deployment (ROLE=all, DATABASE_URL), which is not the case here.
 */
function anotherDevRuns(dir: string, pid: number | undefined): CommandError {
  const holder = pid === undefined ? "" : `pid ${pid}`;
  const url = runningUrl(join(dir, DEV_SETTINGS_FILE));
  return new CommandError(
    url === undefined
      ? `another process${holder ? ` (${holder})` : ""} holds ${dir}: stop it, or start this dev with another DATA_DIR`
      : `another npm run dev runs on ${dir} (${holder ? `${holder}, ` : ""}${url}): use that one, or stop it (Ctrl-C in its terminal) first`,
  );
}

/** The URL a dev stack's settings say it listens on (written once it listens); undefined when the file does not say. */
function runningUrl(file: string): string | undefined {
  try {
    const { url } = JSON.parse(readFileSync(file, "utf8")) as { url?: unknown };
    return typeof url === "string" && /^https?:\/\/[^\s]+$/.test(url) ? url : undefined;
  } catch {
    return undefined;
  }
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

/** Until the first signal (command.ts: SIGHUP too, so a closed terminal leaves no redis-server behind); then stops it all. */
async function stayUp({ logger }: { logger: { flush(): void } }, started: Started, stop: AbortSignal): Promise<void> {
  await stopped(stop);
  try {
    // The service first (last started), so no refresh job is cut off by its upstream vanishing mid-request.
    for (const part of [...started].reverse()) await part.stop();
    process.exitCode = 0;
  } finally {
    logger.flush();
  }
}

/** What the dev stack prints once it is up (and again on Enter): where to look, and the environment that reaches it. */
export function devBanner(b: {
  url: string;
  sandboxUrl: string;
  /** The file the sandbox keeps its records in (createSandbox's `keep`). */
  sandboxState: string;
  redis: { url: string; started?: unknown };
  adminToken: string;
  signingSecret: string;
  apiKey: string;
  /** SECRETS_KEY when it is set (base64): the CLI's accounts and backfill --account open the registry with it. */
  secretsKey?: string | undefined;
  /** Where the secrets come from, one line. */
  secrets: string;
  database: string;
  queuePrefix: string;
  /** The embedded database's directory: the CLI finds the stack's store (and that the stack holds it) there. */
  dataDir?: string;
  /** Things that changed since the last run (a saved port taken by another process). */
  notes: string[];
  /** Whether Enter prints this again (stdin is a terminal). */
  onEnter: boolean;
}): string {
  return [
    "",
    "svc-webhooks local stack is up",
    `  console            ${b.url}/console        (user: any, password: the ADMIN_TOKEN below)`,
    `  webhook endpoint   POST ${b.url}/webhooks   (the sandbox delivers here)`,
    `  queue dashboard    ${b.url}/admin/queues`,
    `  mirror             ${b.url}/mirror/orders?restaurantId=rest_1`,
    `  metrics            ${b.url}/metrics`,
    `  sandbox API        ${b.sandboxUrl}/api/v1   state: ${b.sandboxUrl}/_sandbox/state`,
    `                     (its records are kept across runs in ${b.sandboxState}, saved every ${SANDBOX_SAVE_INTERVAL_MS / 1000} s and at stop; --fresh seeds it anew)`,
    `  redis              ${b.redis.url}${b.redis.started ? " (started for this run, emptied at each start)" : ""}`,
    `  database           ${b.database}`,
    `  secrets            ${b.secrets}; the sandbox's API key is fixed for dev`,
    ...b.notes.map((note) => `  note               ${note}`),
    "",
    "The CLI reaches this stack with (paste into another shell):",
    `  export REDIS_URL=${b.redis.url} QUEUE_PREFIX=${b.queuePrefix} PORT=${new URL(b.url).port}${b.dataDir ? ` DATA_DIR=${b.dataDir}` : ""}`,
    // SANDBOX_URL: trigger acts through this sandbox, so the records its events name exist.
    `  export API_BASE_URL=${b.sandboxUrl} API_KEY=${b.apiKey} SANDBOX_URL=${b.sandboxUrl}`,
    `  export ADMIN_TOKEN=${b.adminToken} SIGNING_SECRET=${b.signingSecret}${b.secretsKey ? ` SECRETS_KEY=${b.secretsKey}` : ""}`,
    "then, e.g.:",
    "  npm run cli -- trigger review.created",
    "  npm run cli -- replay --status failed --dry-run",
    "  npm run cli -- replay --id <event-id>",
    "  npm run cli -- reconcile",
    `${b.onEnter ? "Enter shows this again; " : ""}Ctrl-C stops everything.`,
    "",
  ].join("\n");
}

/** What `showBannerOnEnter` reads: process.stdin, or any stream in a test. */
type KeyInput = Pick<Readable, "on" | "off" | "resume" | "pause">;

/**
 * Prints the banner again each time the developer presses Enter (a line typed on stdin: the
 * terminal stays in its normal mode, so Ctrl-C still stops the stack). Logs scroll the first
 * banner away within seconds. Returns the function that stops listening, so stdin no longer
 * holds the process open.
 */
export function showBannerOnEnter(input: KeyInput, print: () => void): () => void {
  const onData = (chunk: Buffer | string) => {
    if (chunk.toString().includes("\n")) print();
  };
  input.on("data", onData);
  input.resume();
  return () => {
    input.off("data", onData);
    input.pause();
  };
}

/** Kept beside the dev database; it holds the dev stack's generated secrets (mode 0600). */
export const DEV_SETTINGS_FILE = "dev-settings.json";

const port = z.number().int().min(1).max(65535);
const settingsSchema = z.object({
  adminToken: z.string().min(16).max(200),
  signingSecret: z.string().min(16).max(200),
  ports: z.object({ service: port, sandbox: port, redis: port }),
  /** The URL the service of the dev that wrote it listens on (while that dev runs). */
  url: z.string().optional(),
});

/** What `npm run dev` keeps from one run to the next, so the exported CLI settings stay valid. */
type DevSettings = z.infer<typeof settingsSchema>;

const FIRST_PORTS = { service: DEFAULTS.port, sandbox: SANDBOX_PORT };

/**
 * Reads the dev stack's settings from `dir` (generating them on the first run, or all anew with
 * `fresh`), moves each saved port that is taken now to a free one, and writes them back.
 */
export async function devSettings(dir: string, { fresh = false } = {}) {
  const file = join(dir, DEV_SETTINGS_FILE);
  const saved = fresh || !existsSync(file) ? undefined : readSettings(file);
  // The URL the last run listened on is dropped: this run writes its own once it listens.
  if (saved) delete saved.url;
  const settings: DevSettings = saved ?? {
    // Local secrets for the dev stack only; nothing here is a production secret.
    adminToken: `dev-admin-${randomBytes(12).toString("hex")}`,
    signingSecret: `whsec_dev_${randomBytes(12).toString("hex")}`,
    ports: { ...FIRST_PORTS, redis: await freePort() },
  };
  /** Each saved port another process holds now: this run uses `to`, and saves it for the next. */
  const moved: { what: keyof DevSettings["ports"]; from: number; to: number }[] = [];
  for (const what of ["service", "sandbox", "redis"] as const) {
    const from = settings.ports[what];
    if (await portIsFree(from)) continue;
    settings.ports[what] = await freePort();
    moved.push({ what, from, to: settings.ports[what] });
  }
  mkdirSync(dir, { recursive: true });
  saveSettings(file, settings);
  return { settings, file, created: saved === undefined, moved };
}

function saveSettings(file: string, settings: DevSettings): void {
  writeFileSync(file, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
  // `mode` applies only when the file is created: a file copied in with wider rights is narrowed.
  chmodSync(file, 0o600);
}

function readSettings(file: string): DevSettings {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    // Not the parser's message: it quotes the file, which holds secrets.
    throw new CommandError(`${file} is not valid JSON; start with --fresh to make new dev settings`);
  }
  const parsed = settingsSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CommandError(
      `${file}: ${issue ? `${issue.path.join(".") || "the file"} ${issue.message}` : "unreadable"}; start with --fresh to make new dev settings`,
    );
  }
  return parsed.data;
}

/** Can this process listen on 127.0.0.1:`port` now? (Another process may take it before the stack does.) */
function portIsFree(candidate: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(candidate, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** Longest load error a reload logs: a syntax error's message can quote the whole file. */
const MAX_ERROR_CHARS = 500;

export type HandlersModuleWatch = ReturnType<typeof watchHandlersModule>;

/**
 * Watches HANDLERS_MODULE while `npm run dev` runs and hands each edited version to `apply` (the
 * worker's reloadHandlers, which logs what it registered). A module that does not load is one
 * error line and nothing else: the handlers in place keep running. The directory is watched, not
 * the file, because editors often save by writing a new file and renaming it over the old one.
 */
export function watchHandlersModule(options: {
  path: string;
  cwd?: string;
  apply: (handlers: EventHandlers) => void;
  logger: Logger;
  /** Editors save in several writes: one reload after the last of them (default 100 ms). */
  debounceMs?: number;
}) {
  const { path, logger, apply, cwd = process.cwd() } = options;
  const file = isAbsolute(path) ? path : resolve(cwd, path);
  let version = 0;
  let timer: NodeJS.Timeout | undefined;
  // One reload at a time, in the order of the changes.
  let reloading = Promise.resolve();

  const reload = async () => {
    version += 1;
    try {
      apply(await loadHandlersModule(file, cwd, version));
      logger.info({ module: path, version }, `HANDLERS_MODULE ${path} reloaded: its handlers run from the next event on`);
    } catch (err) {
      const message = ((err as Error).message.split("\n")[0] ?? "").slice(0, MAX_ERROR_CHARS);
      logger.error({ module: path, version }, `HANDLERS_MODULE ${path} not reloaded (the previous handlers keep running): ${message}`);
    }
  };
  const watcher = watch(dirname(file), (_event, name) => {
    if (name !== null && name !== basename(file)) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      reloading = reloading.then(reload);
    }, options.debounceMs ?? 100);
  });
  watcher.on("error", (err) => logger.warn({ module: path, err: err.message }, "HANDLERS_MODULE is no longer watched"));
  return {
    stop() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}
