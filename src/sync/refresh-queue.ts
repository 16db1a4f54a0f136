import { DEFAULT_ACCOUNT, ownData, ownId } from "../config/defaults.js";
import { trace, type Link, type Tracer } from "@opentelemetry/api";
import type { Job, Queue } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import type { HandlerMap } from "../events/dispatch.js";
import type { MirrorStore } from "../mirror/mirror-store.js";
import { REFUNDED_STATUS } from "../upstream/models.js";
import { defineScripts, redisKeys, type RedisClient, type RedisKeys } from "../redis/redis.js";
import { activeTraceparent, inSpan, parseTraceparent, type Tracing } from "../tracing/tracing.js";
import type { RateLimitState } from "../upstream/rate-limiter.js";
import { createActivePassLease, type ActivePassLease } from "./active-pass-lease.js";
import type { ResumePoint } from "./read-plan.js";
import { RESOURCES } from "./resources.js";
import type { SyncedKind } from "../mirror/kinds.js";

// The refresh queue: the ids events and operators ask to be read again (pending, with their
// notes), the kind's one BullMQ job that reads them, when it runs (debounce, pace) and the span
// links of the events that asked. Every part reads and writes the keys `redisKeys` names.

/** What an event said about the record it named: hints for the narrowest read, never trusted as data. */
export interface RefreshNote {
  eventId?: string;
  /** orders: the status the event carried (a lower bound: the state machine only moves forward). */
  status?: string;
  /** orders: when the order was created (where a newest-first list can stop looking). */
  createdAt?: string;
  /** bookings: the booking's date. */
  date?: string;
}

/** What the scheduler keeps of a pending id besides its version: the events' hints and the retry state. */
export interface PendingNote extends Omit<RefreshNote, "eventId"> {
  /** Epoch ms of the first event that named the id since it was last read. */
  firstNotedAt: number;
  /** The first events that named it (at most MAX_EVENT_IDS): what a report of an unlisted id names. */
  eventIds?: string[];
  /** Rounds that looked for the id and did not find it. */
  misses?: number;
  /** Epoch ms before which no refresh looks for it again (backoff after a miss). */
  retryAt?: number;
  /** Where the read looking for it stopped at its page budget: the next job goes on from there. */
  resume?: ResumePoint;
}

/** One id waiting for a refresh, as a refresh job takes it. */
export interface PendingId {
  restaurantId: string;
  /** The record's id, or WHOLE_MENU. */
  id: string;
  /** Bumped by every event that names the id: what `forgetRead` and `defer` compare. */
  version: number;
  note: PendingNote;
}

export interface RefreshQueue {
  /**
   * Notes a restaurant's changed `id` (or whole menu) with the event's hints; a run follows within
   * `debounceMs` (`runWithin`).
   */
  request(kind: SyncedKind, restaurantId: string, id?: string, note?: RefreshNote): Promise<void>;
  /** Every id of the kind waiting for a refresh (what a refresh job starts from; reconcile tells webhook from missed by it). */
  pending(kind: SyncedKind): Promise<PendingId[]>;
  /**
   * Forgets the ids a refresh has read, unless one was noted again since `pending` read it: that
   * change may have happened after the read saw its record, so it stays for the next job.
   */
  forgetRead(kind: SyncedKind, read: readonly PendingId[]): Promise<void>;
  /** Keeps an id pending with a new note (a miss and its retry time), unless an event noted it again meanwhile. */
  defer(kind: SyncedKind, pending: PendingId, note: PendingNote): Promise<void>;
  /**
   * Makes sure a refresh of the kind starts within `delayMs`, and no sooner than its pace
   * (`setPace`), with one BullMQ job per kind (a burst of events of every restaurant shares its
   * reads): the deduplication key is held from the job's add until it ends (`keepLastIfActive`), so
   * at most one job of the kind runs, and one waits. Asked while the job runs: BullMQ adds the next
   * one as it ends (the last ask's delay), so a change noted after the run read past its record
   * always gets a run of its own. Asked while one waits: it joins that one, brought forward if it
   * would start later (a backoff's wait). A job whose process died keeps the key and runs again once
   * BullMQ finds it stalled (its lock, JOB_LOCK_MS, lapsed).
   */
  runWithin(kind: SyncedKind, delayMs: number): Promise<void>;
  /**
   * No run of the kind starts before `paceMs` from now (the pace, `RefreshPace`, set by each run as
   * it ends): every ask until then, an event's too, is made for then, whether a job waits or not.
   */
  setPace(kind: SyncedKind, paceMs: number): Promise<void>;
  /** Whether `jobId` is the kind's one job (holds its deduplication key): only it reads. */
  holds(kind: SyncedKind, jobId: string): Promise<boolean>;
  /** Runs the kind's refresh, with tracing on in a span linked from the events that asked for it (`RefreshLinks`). */
  traced<T>(kind: SyncedKind, refresh: () => Promise<T>): Promise<T>;
}

/** The marker a menu refresh leaves in the pending ids: menus are refreshed whole. */
export const WHOLE_MENU = "whole-menu";

/**
 * How long a kind's pending ids outlive the last event that noted one (the TTL is set again on
 * every request). A live refresh reads and forgets them, or reports them as unlisted, within
 * SYNC_UNLISTED_GIVE_UP_SECONDS; what it bounds is what a company that goes quiet leaves behind
 * after a refresh failed for good (a 4xx). The reconciliation sweep rereads everything anyway.
 */
export const PENDING_REFRESH_TTL_MS = 7 * 24 * 3600_000;

/** Event ids kept per pending id (a flood of events for one order must not grow the note). */
const MAX_EVENT_IDS = 20;

/** The stored note of field `f` of the kind's hash, or nil when absent or damaged (a new event replaces it). */
const NOTE_OF = `
local function noteOf(f)
  local ok, n = pcall(cjson.decode, redis.call("HGET", KEYS[1], f) or "")
  if ok and type(n) == "table" then return n end
end
`;

/**
 * Bumps the id's version and merges the event's hints into its note: the furthest order status seen
 * (a later one is a tighter lower bound), the latest dates, the first event ids; a new event clears
 * any backoff (the record changed: look at once).
 * KEYS: pending. ARGV: field, ttlMs, nowMs, eventId, status, statusRank, createdAt, date.
 */
const NOTE = `${NOTE_OF}
local n = noteOf(ARGV[1]) or { firstNotedAt = tonumber(ARGV[3]) }
n.version = (tonumber(n.version) or 0) + 1
if ARGV[4] ~= "" then
  local ids = n.eventIds or {}
  if #ids < ${MAX_EVENT_IDS} then ids[#ids + 1] = ARGV[4] end
  n.eventIds = ids
end
if ARGV[5] ~= "" and (n.rank == nil or tonumber(ARGV[6]) > n.rank) then
  n.status = ARGV[5]
  n.rank = tonumber(ARGV[6])
end
if ARGV[7] ~= "" then n.createdAt = ARGV[7] end
if ARGV[8] ~= "" then n.date = ARGV[8] end
n.retryAt = nil
redis.call("HSET", KEYS[1], ARGV[1], cjson.encode(n))
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return 0
`;

/** Deletes each field whose version is still the one the refresh read (compare-and-delete). */
const FORGET_READ = `${NOTE_OF}
for i = 1, #ARGV, 2 do
  local n = noteOf(ARGV[i])
  if n and n.version == tonumber(ARGV[i + 1]) then redis.call("HDEL", KEYS[1], ARGV[i]) end
end
return 0
`;

/** Replaces a field's note only if no event noted the id since the refresh read it. ARGV: field, version, note. */
const DEFER = `${NOTE_OF}
local n = noteOf(ARGV[1])
if n and n.version == tonumber(ARGV[2]) then redis.call("HSET", KEYS[1], ARGV[1], ARGV[3]) end
return 0
`;

interface Scripts {
  svcNotePendingId(pending: string, ...args: string[]): Promise<number>;
  svcForgetReadIds(pending: string, ...fieldVersionPairs: string[]): Promise<number>;
  svcDeferPendingId(pending: string, field: string, version: string, note: string): Promise<number>;
}

/** A pending id's field in its kind's hash: restaurant and id, unambiguous whatever they hold. */
const fieldOf = (p: Pick<PendingId, "restaurantId" | "id">) => JSON.stringify([p.restaurantId, p.id]);

export function createRefreshQueue(opts: {
  redis: Redis | Cluster;
  queue: Queue<RefreshJobData>;
  prefix: string;
  debounceMs: number;
  /** With tracing on: each request is noted for the refresh's span links (`RefreshLinks`). */
  tracer?: Tracer;
  /** @defaultValue Date.now */
  now?: () => number;
  /**
   * The account whose records these are: its own pending ids, pace and job (docs/accounts.md).
   * @defaultValue DEFAULT_ACCOUNT
   */
  account?: string;
}): RefreshQueue {
  const { redis, queue, prefix, debounceMs } = opts;
  const account = opts.account ?? DEFAULT_ACCOUNT;
  const now = opts.now ?? Date.now;
  const keys = redisKeys(prefix).syncOf(account);
  const runWithin = (kind: SyncedKind, delayMs: number) => runRefreshWithin(queue, { kind, account }, delayMs, () => notBefore(kind));
  const scripts = defineScripts<Scripts>(redis, {
    svcNotePendingId: { numberOfKeys: 1, lua: NOTE },
    svcForgetReadIds: { numberOfKeys: 1, lua: FORGET_READ },
    svcDeferPendingId: { numberOfKeys: 1, lua: DEFER },
  });
  // Wall-clock time, as BullMQ's delays are: the pace and the job's delay are compared directly.
  const notBefore = async (kind: SyncedKind) => Number((await redis.get(keys.refreshPace(kind))) ?? 0);
  const links = opts.tracer
    ? createRefreshLinks({ redis, keys, tracer: opts.tracer, ttlMs: Math.max(600_000, 10 * debounceMs) })
    : undefined;

  return {
    async request(kind, restaurantId, id = WHOLE_MENU, note = {}) {
      // Note the id, then schedule: a job that starts in between still sees the id. The version
      // bump keeps it pending if a running read already passed it. A status outside the kind's
      // states is dropped.
      await links?.note(kind);
      const rank = RESOURCES[kind].states?.rank(note.status);
      await scripts.svcNotePendingId(
        keys.pendingRefresh(kind),
        fieldOf({ restaurantId, id }),
        String(PENDING_REFRESH_TTL_MS),
        String(now()),
        note.eventId ?? "",
        rank === undefined ? "" : (note.status ?? ""),
        rank === undefined ? "" : String(rank),
        note.createdAt ?? "",
        note.date ?? "",
      );
      await runWithin(kind, debounceMs);
    },
    async pending(kind) {
      const stored = Object.entries(await redis.hgetall(keys.pendingRefresh(kind)));
      return stored.flatMap(([field, raw]) => parsePending(field, raw));
    },
    async forgetRead(kind, read) {
      if (read.length > 0)
        await scripts.svcForgetReadIds(keys.pendingRefresh(kind), ...read.flatMap((p) => [fieldOf(p), String(p.version)]));
    },
    async defer(kind, pending, note) {
      const stored = JSON.stringify({ ...note, version: pending.version });
      await scripts.svcDeferPendingId(keys.pendingRefresh(kind), fieldOf(pending), String(pending.version), stored);
    },
    runWithin,
    async setPace(kind, paceMs) {
      if (paceMs > 0) await redis.set(keys.refreshPace(kind), String(Date.now() + paceMs), "PX", Math.ceil(paceMs));
    },
    async holds(kind, jobId) {
      return (await queue.getDeduplicationJobId(dedupId({ kind, account }))) === jobId;
    },
    traced: (kind, refresh) => (links ? links.traced(kind, refresh) : refresh()),
  };
}

/** A pending id as stored; one whose field or note does not parse (written by hand, or damaged) is skipped. */
function parsePending(field: string, raw: string): PendingId[] {
  try {
    const [restaurantId, id] = JSON.parse(field) as [string, string];
    const { version, ...note } = JSON.parse(raw) as PendingNote & { version: number };
    if (typeof version !== "number" || typeof note.firstNotedAt !== "number") return [];
    // cjson writes an empty Lua table as {}, never []: keep only a real list.
    return [{ restaurantId, id, version, note: { ...note, eventIds: Array.isArray(note.eventIds) ? note.eventIds : [] } }];
  } catch {
    return [];
  }
}

/** The data of a kind's one refresh job (RefreshQueue.runWithin). */
export interface RefreshJobData {
  kind: SyncedKind;
  /** Whose records: absent for `default` (and in jobs queued before accounts). */
  account?: string;
  /**
   * Epoch ms the job was asked to run at: what a later ask compares with (a job BullMQ adds as the
   * running one ends counts its delay from that end, a few ms late, and would be replaced by every
   * ask).
   */
  runAt?: number;
}

/** The name of a kind's refresh job on the sync queue (the sync worker runs createRefreshJob by it). */
export const REFRESH_JOB = "refresh";

/** The kind's one job of the account: `refresh-orders` for `default`, as before accounts; `refresh-orders@acme` for another. */
const dedupId = ({ kind, account }: { kind: SyncedKind; account: string }) => ownId(`refresh-${kind}`, account);

/** RefreshQueue.runWithin. */
async function runRefreshWithin(
  queue: Queue<RefreshJobData>,
  of: { kind: SyncedKind; account: string },
  delayMs: number,
  notBefore: () => Promise<number>,
): Promise<void> {
  const { kind, account } = of;
  const deduplication = { id: dedupId(of), keepLastIfActive: true };
  const askedAt = Date.now() + Math.max(0, Math.ceil(delayMs));
  const runAt = Math.max(askedAt, await notBefore());
  const add = (at: number, replace = false) =>
    queue.add(
      REFRESH_JOB,
      { kind, runAt: at, ...ownData(account) },
      { delay: Math.max(0, at - Date.now()), deduplication: { ...deduplication, replace } },
    );
  const added = await add(runAt);
  const job = added.id === undefined ? undefined : await queue.getJob(added.id);
  if (!job) return;
  // Joined the running job, whose next run BullMQ adds from the last ask made while it runs: if the
  // run set its pace after this ask read it, this ask (perhaps the last) is made again for then.
  if (job.processedOn !== undefined && job.finishedOn === undefined) {
    const paced = Math.max(askedAt, await notBefore());
    if (paced > runAt) await add(paced);
    return;
  }
  // Joined a job that waits longer than asked (a backoff's wait): replaced in one script by one due
  // as asked, if it still waits (BullMQ's replace mode touches delayed jobs only), never before the
  // pace.
  if ((job.data.runAt ?? job.timestamp + job.delay) > runAt) await add(runAt, true);
}

/** What a refresh job logs of the kind's refresh (its RefreshOutcome, refresh-kind.ts). */
interface RefreshTally {
  calls: number;
  reads: number;
  found: number;
  written: number;
}

export interface RefreshJobDeps {
  scheduler: Pick<RefreshQueue, "holds" | "pending" | "runWithin" | "setPace">;
  pace: RefreshPace;
  /** The kind's refresh (refresh-kind.ts), in its trace when tracing is on (`RefreshQueue.traced`). */
  refresh: (kind: SyncedKind) => Promise<RefreshTally>;
  logger: Logger;
}

/**
 * The sync queue's `refresh` job, the kind's one job (RefreshQueue.runWithin): runs the kind's
 * refresh, then asks for the next run (`askNextRun`). Nothing waits while holding the kind: the
 * pace (`RefreshPace`) is the next job's delay. A refresh job that is not the kind's one (an
 * operator's retry of a failed one) reads nothing and asks for the kind's one instead.
 */
export function createRefreshJob(deps: RefreshJobDeps): (job: Job) => Promise<RefreshTally | { handedOver: true }> {
  return async (job) => {
    const { kind } = job.data as RefreshJobData;
    if (!(await deps.scheduler.holds(kind, job.id ?? ""))) {
      await deps.scheduler.runWithin(kind, 0);
      return { handedOver: true };
    }
    const started = Date.now();
    const outcome = await deps.refresh(kind);
    const ms = Date.now() - started;
    const nextInMs = await askNextRun(deps, kind, ms);
    const { calls, reads, found, written } = outcome;
    deps.logger.debug({ kind, ms, calls, reads, found, written, nextInMs }, "refresh done");
    return outcome;
  };
}

/**
 * Sets the kind's pace, counted from the start of the run that took `ranMs` (`paceAfterRunMs`),
 * then asks for the next run for when the first pending id is due. Then reads again: BullMQ keeps
 * the last ask made while a job runs, so a request noted after the first read whose ask came
 * before ours was replaced by ours; an id due sooner asks again. Returns the delay asked for.
 */
async function askNextRun(deps: Pick<RefreshJobDeps, "scheduler" | "pace">, kind: SyncedKind, ranMs: number): Promise<number | undefined> {
  const paceMs = paceAfterRunMs(await deps.pace(), ranMs);
  await deps.scheduler.setPace(kind, paceMs);
  let asked: { due: number; delayMs: number } | undefined;
  for (;;) {
    const now = Date.now();
    const due = nextDue(await deps.scheduler.pending(kind), now);
    if (due === undefined || (asked && due >= asked.due)) return asked?.delayMs;
    asked = { due, delayMs: Math.max(due - now, paceMs) };
    await deps.scheduler.runWithin(kind, due - now);
  }
}

/**
 * When the first pending id is due: now for one noted or left over, else when its backoff ends;
 * undefined when none is pending.
 */
export function nextDue(pending: readonly PendingId[], now: number): number | undefined {
  let due = Infinity;
  for (const { note } of pending) due = Math.min(due, Math.max(now, note.retryAt ?? now));
  return Number.isFinite(due) ? due : undefined;
}

/**
 * Refreshes paced by the budget, so that cost per event falls as the rate rises. After a run, the
 * kind's next run starts no sooner than the pace says (`createRefreshJob`), the longer the faster the
 * webhook class spends the budget now (the last 15 s scaled to a window: a window's own count would
 * tell a minute late): nothing below a third of `share`, `maxWaitMs` at `share` and above, in
 * proportion between. Only the webhook class counts: it is what refreshes compete with at their own
 * priority, while the classes below (a backfill, a full pass) take only what refreshes leave, and
 * keep the whole budget busy when they run. The events that come meanwhile join the next run's
 * batch: a busy minute makes fewer, fuller reads (one status page for many orders) instead of one
 * small job a second. `maxWaitMs` bounds the freshness traded for calls. Says how long the next
 * run waits, as the budget's use says (0 … `maxWaitMs`).
 */
export type RefreshPace = () => Promise<number>;

export interface RefreshPaceOptions {
  /** The shared budget's window (every process). */
  state: () => Promise<Pick<RateLimitState, "recentPerWindowByClass" | "max">>;
  /** Share of the rate refreshes aim to keep the budget under (SYNC_REFRESH_PACE_SHARE); 1 turns pacing off. */
  share: number;
  /** The longest wait, at the share and above (SYNC_REFRESH_PACE_MAX_WAIT_MS). */
  maxWaitMs: number;
}

/** The wait at a rate of `used` slots per window against a share of `high` slots (the curve RefreshPace describes). */
export function paceWaitMs(used: number, high: number, maxWaitMs: number): number {
  const low = high / 3;
  if (high <= 0 || used <= low) return 0;
  return Math.round(maxWaitMs * Math.min(1, (used - low) / (high - low)));
}

/**
 * What is left of a pace once a run took `ranMs`: the pace spaces the starts of a kind's runs, not
 * the idle time after each. A run's own reads already wait for the budget's slots, so a long run
 * (a deep status list walked for old orders' refunds) spent its wait while reading; idling the
 * whole pace after it as well would hold the events noted during it for run + pace (the live
 * row's slowest changes).
 */
export const paceAfterRunMs = (paceMs: number, ranMs: number): number => Math.max(0, paceMs - Math.max(0, ranMs));

export function createRefreshPace(options: RefreshPaceOptions): RefreshPace {
  return async () => {
    if (options.share >= 1 || options.maxWaitMs <= 0) return 0;
    const { recentPerWindowByClass, max } = await options.state();
    return paceWaitMs(recentPerWindowByClass.webhook, Math.floor(max * options.share), options.maxWaitMs);
  };
}

/** Most events of one burst linked from its refresh: a flood must not make a span of megabytes. */
const MAX_LINKS = 128;

/**
 * Span links for the coalesced refresh. Many events of a kind (every restaurant) share one refresh job, which
 * carries the trace of the first (bullmq-otel); each event notes its own trace context here when it
 * schedules the refresh, and the refresh's span links to every trace noted since the last one ran.
 * Best-effort and bounded: a lost note loses a link, never a refresh.
 */
interface RefreshLinks {
  /** Remembers the active span (the handler's) for the next refresh of this kind. */
  note(kind: string): Promise<void>;
  /** Runs a refresh in a span linked to every event that asked for it since the last one. */
  traced<T>(kind: string, refresh: () => Promise<T>): Promise<T>;
}

function createRefreshLinks(options: {
  redis: Redis | Cluster;
  keys: Pick<ReturnType<RedisKeys["syncOf"]>, "refreshLinks">;
  tracer: Tracer;
  ttlMs: number;
}): RefreshLinks {
  const { redis, tracer } = options;
  const key = (kind: string) => options.keys.refreshLinks(kind);

  const take = async (kind: string): Promise<Link[]> => {
    const k = key(kind);
    const replies = await redis.multi().lrange(k, 0, -1).del(k).exec();
    const noted = (replies?.[0]?.[1] ?? []) as string[];
    const own = trace.getActiveSpan()?.spanContext().traceId;
    const links = new Map<string, Link>();
    for (const value of noted) {
      const context = parseTraceparent(value);
      // The trace the refresh runs in needs no link to itself.
      if (context && context.traceId !== own) links.set(context.traceId, { context });
    }
    return [...links.values()];
  };

  return {
    async note(kind) {
      const traceparent = activeTraceparent();
      if (!traceparent) return;
      const k = key(kind);
      await redis
        .multi()
        .rpush(k, traceparent)
        .ltrim(k, -MAX_LINKS, -1)
        .pexpire(k, options.ttlMs)
        .exec()
        .catch(() => undefined);
    },
    async traced(kind, refresh) {
      const links = await take(kind).catch(() => []);
      const attributes = { "svc.mirror.kind": kind, "svc.refresh.linked_traces": links.length };
      return inSpan(tracer, `refresh ${kind}`, { links, attributes }, () => refresh());
    },
  };
}

/** One account's refresh queue as a worker process wires it, and its active tier's lease beside it. */
export interface RefreshRequests {
  /** Where handlers, the refresh job and the tiers note, read and schedule refreshes. */
  queue: RefreshQueue;
  /** One active pass of the account at a time across every worker (one refresh per kind is the queue's). */
  activePassLease: ActivePassLease;
}

/**
 * Where events and operators ask for an account's records to be read again, and who may read them
 * when: each account's own, built once per account (its keys, `redisKeys().syncOf`, and its jobs).
 */
export function createRefreshRequests(deps: {
  config: Config;
  connection: RedisClient;
  syncQueue: Queue;
  tracing?: Tracing | undefined;
}): (account?: string) => RefreshRequests {
  const { config, connection, tracing } = deps;
  const prefix = config.queuePrefix;
  const built = new Map<string, RefreshRequests>();
  return (account = DEFAULT_ACCOUNT) => {
    let requests = built.get(account);
    if (!requests)
      built.set(
        account,
        (requests = {
          queue: createRefreshQueue({
            redis: connection,
            queue: deps.syncQueue as Queue<RefreshJobData>,
            prefix,
            account,
            debounceMs: config.worker.syncDebounceMs,
            ...(tracing ? { tracer: tracing.tracer } : {}),
          }),
          activePassLease: createActivePassLease({ redis: connection, prefix, account, ttlMs: config.worker.lockMs }),
        }),
      );
    return requests;
  };
}

// The built-in handlers: the refresh queue's front door.

/** Sync needs only the mirror of a handler's context; the worker's full context is wider. */
type SyncHandlers = HandlerMap<{ mirror: MirrorStore }>;

/**
 * The built-in handlers. Order and booking events only note what changed and schedule a
 * coalesced refresh (the API is the truth; payloads may be stale, thin, duplicated or out of
 * order). Reviews have no endpoint, so they are stored as delivered.
 */
export function createSyncHandlers(
  schedulerOf: (account: string) => Pick<RefreshQueue, "request">,
  { withApi }: { withApi: boolean },
): SyncHandlers {
  const storeReview: SyncHandlers["review.created"] = async (e, ctx) => {
    await ctx.mirror.upsert("reviews", [e.data], await ctx.mirror.clock());
  };
  if (!withApi) return { "review.created": storeReview };
  // What the event says of the record (status, dates) is a hint for the narrowest read, never data.
  const text = (value: unknown) => (typeof value === "string" ? value : undefined);
  // The account's own queue: its records are read with its key into its mirror.
  const of = (e: { account?: string | undefined }) => schedulerOf(e.account ?? DEFAULT_ACCOUNT);
  const order = async (e: {
    id: string;
    account?: string | undefined;
    data: { id: string; restaurantId: string; status?: string | undefined; createdAt?: unknown };
  }) =>
    of(e).request("orders", e.data.restaurantId, e.data.id, {
      eventId: e.id,
      status: e.data.status,
      createdAt: text(e.data.createdAt),
    });
  const booking = async (e: {
    id: string;
    account?: string | undefined;
    data: { id: string; restaurantId: string; date?: string | undefined };
  }) => of(e).request("bookings", e.data.restaurantId, e.data.id, { eventId: e.id, date: e.data.date });
  return {
    "order.created": order,
    "order.status_changed": order,
    // Fired by the refund operation only (spec part 6): the order is REFUNDED even when the event is thin.
    "order.refunded": (e) => order({ ...e, data: { ...e.data, status: e.data.status ?? REFUNDED_STATUS } }),
    "booking.created": booking,
    "booking.status_changed": booking,
    "menu_item.updated": (e) => of(e).request("menu-items", e.data.restaurantId),
    "review.created": storeReview,
  };
}
