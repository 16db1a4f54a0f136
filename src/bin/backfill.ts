import { duration } from "../base/duration.js";
import { loadConfig } from "../config/config.js";
import { embeddedDatabaseExists } from "../mirror/database.js";
import { accountParam, createAccountRegistry, createSecretsBox } from "../mirror/accounts.js";
import { accountQuery, DEFAULT_ACCOUNT } from "../config/defaults.js";
import { DataDirLockedError } from "../mirror/embedded-server.js";
import type { Storage } from "../mirror/storage.js";
import { createMirrorWriter } from "../mirror/change-outbox.js";
import { changeListenersOf } from "../events/change-listeners.js";
import { loadHandlersModule } from "../worker/handlers.js";
import { printableRedisUrl, type RedisClient } from "../redis/redis.js";
import { type BackfillProgress, runBackfill } from "../sync/resumable-backfill.js";
import { SYNCED_KINDS } from "../sync/resources.js";
import type { SyncedKind } from "../mirror/kinds.js";
import { MAX_LIMIT } from "../upstream/models.js";
import { UpstreamPageRefusedError } from "../upstream/errors.js";
import { upstreamFromConfig } from "../worker/upstream.js";
import { syncOptionsProblem } from "../worker/operator-actions.js";
import { type Answer, answer, CommandError, flagOptions, parseFlags, plural, UsageError } from "./command.js";
import { SyncQueued } from "../http/operator-schemas.js";
import { closeCliRedis, openCliRedis, openMigratedStorage, operatorClient, withDirectActions } from "./operator.js";

export const help = `svc-webhooks backfill [--kinds ${SYNCED_KINDS.join(",")}] [--since YYYY-MM-DD] [--restart] [--no-changes]
                      [--account <id>] [--url <url>]

It acts on the deployment the environment names. When a running service holds its embedded
database (DATA_DIR), or with --url (a service's operator API, with ADMIN_TOKEN), it asks the
service's workers for the sweep through Redis and prints the job; asked again while that job
waits, it answers the same job (--no-changes is refused then). Otherwise it runs the sweep
itself, as follows.

Reads every order, booking and menu item through the API into the mirror, within the shared
rate budget (class "full": it takes whatever webhook refreshes and the active tier leave, the
whole budget when they are idle, and steps aside for them). Needs REDIS_URL, API_BASE_URL and API_KEY, and the database
(DATABASE_URL, or the embedded one under DATA_DIR).

Resumable: where each kind stands is saved in the database after every page. Run it again after
Ctrl-C or a crash and it goes on at the saved page; a kind that run finished is not read again.
Once every kind has finished, the next run starts fresh.
Every record it changes produces a change event (source "backfill"), relayed to your handlers by
the running workers. A record the mirror cannot hold (a NUL in a string, a date like 2026-02-30)
is set aside in rejected_records with its reason, named on stderr and counted in the summary
("rejected"); the rest is written and the command still exits 0. Ctrl-C stops after the page in
hand is saved, or at once when a read waits (for the budget, for the API), with exit 130; a second
Ctrl-C stops at once. While Redis (where the budget lives) does not answer, it says so and waits;
after a Redis restart that lost its data it goes on.
  --since DAY    only orders created on or after DAY, bookings dated on or after it (menus whole);
                 a different window than the saved one starts fresh
  --restart      start every kind from the top, whatever was saved
  --no-changes   write the mirror without producing change events
  --account ID   a registered account's mirror, read with its key (needs SECRETS_KEY here, the
                 service's own, unless a running service or --url takes the sweep)`;

export const answers = true;

/** A registered account's API key, opened from the registry with SECRETS_KEY. */
async function keyOf(storage: Storage, secretsKey: Buffer | undefined, account: string): Promise<string> {
  if (!secretsKey) throw new UsageError(`backfill --account reads ${account}'s key from the registry: set SECRETS_KEY, the service's own`);
  const found = (await createAccountRegistry(storage.database.db, createSecretsBox(secretsKey)).keys()).find((a) => a.id === account);
  if (!found) throw new CommandError(`no account ${account} whose key opens with this SECRETS_KEY (accounts list names the accounts)`);
  return found.apiKey;
}

/** The service's workers took the sweep: the job, as the operator API answers it. */
const queued = (job: { job: string }) => answer(job, `backfill queued as job ${job.job} for the service's workers`);

/** A sweep run here: what it wrote, what the mirror refused, and whether it finished. */
function swept(value: { backfilled: Record<string, number>; rejected: Record<string, number>; state: string }): Answer {
  const kinds = Object.entries(value.backfilled).map(([kind, n]) => `${n} ${kind}`);
  const refused = Object.entries(value.rejected).map(([kind, n]) => `${n} ${kind}`);
  return answer(
    value,
    `${value.state === "complete" ? "backfilled" : "stopped after"} ${kinds.join(", ") || plural(0, "record")}` +
      (refused.length > 0 ? `; refused (set aside in rejected_records): ${refused.join(", ")}` : ""),
  );
}

export async function run(argv: string[], env: NodeJS.ProcessEnv, stop: AbortSignal): Promise<Answer> {
  const { values } = parseFlags({
    args: argv,
    options: flagOptions(["kinds", "since", "url", "account"], ["restart", "no-changes"]),
    strict: true,
  });
  const kinds = values.kinds ? values.kinds.split(",").map((k) => k.trim()) : SYNCED_KINDS;
  const since = values.since;
  // The operator API's checks, in its words, named as flags (each problem starts with the option's name):
  // `--kinds " "` splits into one blank entry, which is told as "an empty list".
  const problem = syncOptionsProblem(kinds, since);
  if (problem) throw new UsageError(`--${problem}`);

  const account = accountParam(values.account);
  const request = { ...(values.kinds ? { kinds } : {}), ...(since ? { since } : {}), ...(values.restart ? { restart: true } : {}) };
  // --no-changes is a first import by hand: the service's sweep always produces change events.
  if (values.url !== undefined) {
    if (values["no-changes"]) throw new UsageError("--no-changes runs the sweep here; it does not go with --url");
    const path = `/sync/backfill${accountQuery(account)}`;
    return queued(await operatorClient(values.url, env).call("POST", path, SyncQueued, request));
  }
  const config = loadConfig({ ...env, ROLE: "worker" });
  // What the sweep needs here (the API, Redis) is checked before the database is opened, so a
  // backfill that fails creates no store (a mistyped DATA_DIR stays absent). An embedded database
  // that exists may be a running service's, which then runs the sweep and needs neither here.
  if (!config.api && !embeddedDatabaseExists(config.database))
    throw new UsageError(`backfill needs API_BASE_URL and API_KEY (nothing was created in DATA_DIR ${config.database.dataDir})`);
  const connection = await openCliRedis(config);
  // A record the mirror cannot hold is set aside (rejected_records) and the sweep goes on: one
  // line each on stderr (id shortened, never the values), a count in the summary, exit 0.
  const rejected: Record<string, number> = {};
  let storage;
  try {
    storage = await openMigratedStorage(config, {
      onRejected(records) {
        for (const r of records) {
          rejected[r.kind] = (rejected[r.kind] ?? 0) + 1;
          process.stderr.write(`\nrefused (${r.reason}): ${r.message}\n`);
        }
      },
    });
  } catch (err) {
    await closeCliRedis(connection);
    if (!(err instanceof DataDirLockedError) || values["no-changes"]) throw err;
    // The embedded database is a running service's: its workers run the sweep (one job on the sync queue).
    return queued(await withDirectActions(config, undefined, (actions) => actions.requestSync("backfill", { ...request, account })));
  }
  // Ctrl-C (command.ts): the page in hand is saved; a read still waiting (the budget, the answer) ends at once.
  const onStop = () => process.stderr.write("\nstopping after the page in hand (Ctrl-C again to stop at once)\n");
  stop.addEventListener("abort", onStop, { once: true });
  const outage = reportRedisOutages(connection, config.redisUrl);
  try {
    if (!config.api) throw new UsageError("backfill needs API_BASE_URL and API_KEY");
    const apiKey = account === DEFAULT_ACCOUNT ? config.api.apiKey : await keyOf(storage, config.secretsKey, account);
    const { api } = upstreamFromConfig({ ...config.api, apiKey }, connection, config.queuePrefix);
    const stores = storage.forAccount(account);
    const expected = await expectedRecords(stores.checkpoints, since ?? null);
    const windowSeconds = (config.api.rateWindowMs + config.api.rateSafetyMs) / 1000;
    const line = createBackfillProgress({
      budgetRecordsPerSecond: (config.api.rate * MAX_LIMIT) / windowSeconds,
      expected: (k) => expected.get(k),
    });
    const tty = process.stderr.isTTY;
    const outcome = await runBackfill({
      api,
      mirror: stores.mirror,
      checkpoints: stores.checkpoints,
      kinds: kinds as SyncedKind[],
      since: since ?? null,
      restart: values.restart === true,
      // A change becomes an event only if a handler the workers run (HANDLERS_MODULE) receives it.
      ...(values["no-changes"]
        ? {}
        : {
            writer: createMirrorWriter(stores.mirror, {
              listens: changeListenersOf(config.handlersModule ? [await loadHandlersModule(config.handlersModule)] : []),
            }),
          }),
      signal: stop,
      // On a terminal one line rewritten in place; in a log, a line per page.
      onProgress: (p) => process.stderr.write(tty && !p.done ? `\r${line(p)}` : `${tty ? "\r" : ""}${line(p)}\n`),
    }).catch((err: unknown) => {
      // A page the API cannot be walked on from: one line, not a stack; the pages before it are saved.
      if (err instanceof UpstreamPageRefusedError)
        throw new CommandError(`${err.message} (${err.code}); the pages before it are saved: run backfill again once the API is fixed`);
      throw err;
    });
    if (outcome.state === "interrupted") {
      process.stderr.write("stopped: run backfill again to go on where it stopped\n");
      process.exitCode = 130;
    }
    return swept({ backfilled: outcome.totals, rejected, state: outcome.state });
  } finally {
    stop.removeEventListener("abort", onStop);
    outage.dispose();
    await closeCliRedis(connection);
    await storage.close();
  }
}

/**
 * The budget lives in Redis: while Redis does not answer, the sweep waits for it (its reads take
 * no slot), and says so on stderr once per outage rather than falling silent; after a restart that
 * lost Redis's data the budget starts afresh and the sweep goes on (its place is in the database).
 */
function reportRedisOutages(connection: RedisClient, url: string): { dispose(): void } {
  let away = false;
  const onClose = () => {
    if (!away)
      process.stderr.write(
        `\nRedis at ${printableRedisUrl(url)} does not answer: waiting for it (the rate budget lives there; Ctrl-C stops)\n`,
      );
    away = true;
  };
  const onReady = () => {
    if (away) process.stderr.write("Redis answers again: going on\n");
    away = false;
  };
  connection.on("close", onClose);
  connection.on("ready", onReady);
  return {
    dispose() {
      connection.off("close", onClose);
      connection.off("ready", onReady);
    },
  };
}

/** Each kind's size from its last complete pass (a backfill of the same window, or the full tier when no window). */
async function expectedRecords(checkpoints: Storage["checkpoints"], since: string | null): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  const complete = [...(since === null ? await checkpoints.list("full") : []), ...(await checkpoints.list("backfill"))].filter(
    (c) => c.passCompletedAt !== null && c.since === since,
  );
  for (const c of complete) sizes.set(c.kind, Math.max(sizes.get(c.kind) ?? 0, c.records));
  return sizes;
}

/**
 * The progress line of `svc-webhooks backfill` for one kind: records so far, the rate of this
 * run, and an ETA when the size of the list is known from an earlier complete pass — never
 * faster than the budget allows (its pages per window, 100 records a page: the full class may take
 * all of it when nothing above it runs).
 */
export function createBackfillProgress(options: {
  /** Most records a second the whole budget can read. */
  budgetRecordsPerSecond: number;
  /** Records of the kind's list, from the last complete pass (full tier or backfill), when known. */
  expected: (kind: string) => number | undefined;
  now?: () => number;
}) {
  const now = options.now ?? (() => performance.now());
  const started = new Map<string, number>();
  return function line(p: BackfillProgress): string {
    if (p.skipped) return `${p.kind}: done in the interrupted run (${p.checkpoint.records} records), not read again`;
    if (!started.has(p.kind)) started.set(p.kind, now());
    const seconds = (now() - (started.get(p.kind) ?? now())) / 1000;
    const rate = seconds > 0 ? p.records / seconds : 0;
    const head = `${p.kind}: ${p.checkpoint.records} records, ${p.checkpoint.pages} pages`;
    const resumed = p.resumed ? " (resumed)" : "";
    if (p.done) return `${head}${resumed} — done`;
    const expected = options.expected(p.kind);
    const speed = Math.min(rate > 0 ? rate : options.budgetRecordsPerSecond, options.budgetRecordsPerSecond);
    const eta =
      expected !== undefined && expected > p.checkpoint.records && speed > 0
        ? `ETA ${duration((expected - p.checkpoint.records) / speed)}`
        : `ETA unknown (budget ≤ ${Math.round(options.budgetRecordsPerSecond)} records/s)`;
    return `${head}${resumed}, ${rate.toFixed(1)} records/s, ${eta}`;
  };
}
