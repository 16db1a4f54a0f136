import { setTimeout as delay } from "node:timers/promises";
import { Backoffs, UnrecoverableError, type BackoffOptions } from "bullmq";
import type { Logger } from "pino";
import { EventDataError, type AnyEvent } from "../events/catalog.js";
import {
  dispatchEvent,
  errorMessage,
  type DispatchResult,
  failedOutcome,
  failureSummary,
  handlerStacks,
  withHandlerStacks,
  startHandlerDeadline,
  type HandlerRegistry,
} from "../events/dispatch.js";
import { DEFAULT_ACCOUNT } from "../config/defaults.js";
import { EventLogError } from "../mirror/errors.js";
import type { EventAttempt, EventLog, HandlerOutcomeData } from "../mirror/event-log.js";
import { withCarriedTrace } from "../tracing/tracing.js";
import type { IngestedEvent } from "./ingest-stream.js";

type Outcome = HandlerOutcomeData;

/** The outcomes of the handlers that succeeded: what a later attempt carries instead of running them again. */
export const okOutcomes = (outcomes: Record<string, Outcome>): Record<string, Outcome> =>
  Object.fromEntries(Object.entries(outcomes).filter(([, o]) => o.status === "ok"));

/** What the runner needs of the event log: record an attempt, and whether it holds an event. */
export interface AttemptLog extends Pick<EventLog, "recordAttempt"> {
  /** Whether the log holds the event: of `account` when given (a registered company's), else the log's own. */
  holds(id: string, account?: string): Promise<boolean>;
}

export interface AttemptRunnerOptions<Ctx> {
  registry: HandlerRegistry<Ctx>;
  /**
   * `attempt` is 1 on an event's first run, 2 on its first retry, …; `signal` aborts at the
   * deadline; `data` is the event as it arrived (its account's registration among it).
   */
  makeContext(event: AnyEvent, attempt: number, logger: Logger, signal: AbortSignal, data: IngestedEvent): Ctx;
  /** How long an attempt's handlers may run (HANDLER_TIMEOUT_MS); past it they fail, retryably. 0 or unset: no deadline. */
  handlerTimeoutMs?: number;
  /** Errors that no retry can fix (a 4xx from the API other than 429), beside UnrecoverableError and EventDataError. */
  isPermanent?(err: unknown): boolean;
  /** The event log; without it nothing is recorded (tests of the delivery path alone). */
  eventLog?: AttemptLog;
  logger: Logger;
  /** The first wait while the log is away (default 100 ms); doubles up to 5 s. */
  logWaitMs?: number;
  /**
   * Whether the event still belongs to its account as it was when the event arrived (its account
   * not removed, nor added again since: mirror/accounts.ts `belongsToAccount`). Asked before the
   * handlers start and again before the attempt is recorded; false drops the event. Default: always.
   */
  belongs?(data: IngestedEvent): boolean;
  /** Told of each event dropped so (a metric); the runner logs the first per account and registration. */
  onDropped?(data: IngestedEvent): void;
}

/** One attempt at an event, as its source (the ingest stream or the events queue) hands it over. */
interface Attempt {
  data: IngestedEvent;
  /**
   * The attempt's number in its run: 1 for the event's first attempt, 2 for its first retry, …;
   * a replay is a run of its own, from 1 again (attemptOfJob): log lines, ctx.attempt and the
   * event's handler attempts all say this number.
   */
  number: number;
  /** N of "attempt n of N": the number the last attempt of this run may reach; at `number >= of` a failure is final. */
  of: number;
  /**
   * The source's BullMQ backoff (a job's `opts.backoff`): should the attempt fail and be retried,
   * the wait before the next one is drawn from it for attempt `number` (drawRetryDelay), the
   * record names that time, and the source schedules the retry with it (AttemptResult's
   * `retryDelayMs`). Unset: no time is recorded.
   */
  backoff?: number | BackoffOptions | undefined;
  /** A fresh delivery from the sender (a stream entry read for the first time): a duplicate of an event the log holds is skipped. */
  delivery?: boolean;
  /** Handler keys that already succeeded (an earlier attempt, or not aimed at by a replay): not run. */
  done?: ReadonlySet<string>;
  /** Earlier outcomes that no record holds yet: recorded with this attempt. */
  carried?: Record<string, Outcome>;
  /** The attempt starts a new run in the log, one more replay (a replay's first attempt, a failed job retried by hand). */
  newRound?: boolean;
  /** Fails the event for good with this reason without running anything (a job whose worker died on it too often). */
  giveUp?: string;
  /** Called as each handler succeeds, with every outcome so far (the queue saves them in the job's progress). */
  onSuccess?(key: string, outcomes: Record<string, Outcome>): Promise<void>;
  /**
   * Where the handlers run: a source with slots of its own (the stream consumer's) starts `run` in
   * one, or resolves undefined without starting it (it stops): the attempt then ends `released`.
   */
  slot?(run: () => Promise<DispatchResult>): Promise<DispatchResult | undefined>;
  /** True once the source stops: an attempt waiting for the log then ends `unrecorded`. */
  stopping(): boolean;
  /** The BullMQ job the event's next attempt runs in (EventAttempt.job), recorded with the attempt. */
  job?: string | undefined;
  /** Bound to the event and where the attempt comes from (entry id or job id). */
  logger: Logger;
}

/**
 * How an attempt ended, recorded in the event log (all but `unrecorded` and `duplicate`):
 * - completed: every handler succeeded;
 * - retried: some failure a retry may fix, and attempts are left; `retry` names the handlers to run
 *   again, `retryDelayMs` (the attempt's own) how long after now, as recorded;
 * - failed: for good (every failure permanent, the data fails its schema, or no attempt left): a dead letter;
 * - duplicate: a fresh delivery of an event id the log holds: the same event, already taken, nothing ran;
 * - released: the source stopped before the handlers started; nothing ran or was recorded;
 * - dropped: the event's account was removed (or removed and added again) since the event arrived:
 *   its handlers did not start, or what they did is not recorded; the source lets it go for good;
 * - unrecorded: the log was away until the source stopped; `ok` holds the outcomes of the handlers
 *   that succeeded, which the next attempt records instead of running them again.
 * `error` is what a BullMQ job fails with: the summary, and the handlers' stacks (`stacks`) as its stack.
 */
export type AttemptResult =
  | { outcome: "completed" }
  | { outcome: "retried"; retry: string[]; error: Error; retryDelayMs?: number }
  | { outcome: "failed"; failed: string[]; error: UnrecoverableError; stacks?: string }
  | { outcome: "duplicate" }
  | { outcome: "released" }
  | { outcome: "unrecorded"; ok: Record<string, Outcome> }
  | { outcome: "dropped" };

export interface AttemptRunner {
  run(attempt: Attempt): Promise<AttemptResult>;
  /** The keys of every handler an event of `type` runs (the registry's). */
  handlerKeys(type: string): string[];
  /** How many attempts wait for the event log now (the database is away): readiness and metrics. */
  waitingOnLog(): number;
}

/**
 * The one engine of an attempt at an event, for the stream's first attempts and the events
 * queue's jobs alike: the deadline, the dispatch (every handler, each failure isolated), the
 * record in the event log, what happens while the log is away, and the verdict (retry, failed for
 * good, dead letter). Its source only decides where the next attempt comes from.
 *
 * While the log cannot take an attempt (the database is away, its disk full), the attempt holds
 * its outcomes in memory and its slot, asking again from `logWaitMs` doubling to `maxLogWaitMs`:
 * its handlers are not run again, and a source whose every slot waits takes nothing new, so the
 * backlog grows until the edge answers 503. Only a stop ends the wait (`unrecorded`).
 */
export function createAttemptRunner<Ctx>(options: AttemptRunnerOptions<Ctx>): AttemptRunner {
  const { registry, eventLog } = options;
  const { whileLogAway, waiting } = createLogWait({ firstWaitMs: options.logWaitMs ?? 100, maxWaitMs: 5000 });
  const permanent = (err: unknown) =>
    err instanceof UnrecoverableError || err instanceof EventDataError || (options.isPermanent?.(err) ?? false);
  const dropping = createDrops(options);

  /** Records the attempt; false when the source stopped while the log was away. */
  async function record(a: Attempt, status: EventAttempt["status"], handlers: Record<string, Outcome>): Promise<boolean> {
    if (!eventLog) return true;
    const entry: EventAttempt = {
      id: a.data.id,
      type: a.data.type,
      payload: a.data.payload,
      status,
      handlers,
      newRound: a.newRound === true,
      ...(a.job !== undefined ? { job: a.job } : {}),
      ...(a.data.account !== undefined ? { account: a.data.account } : {}),
    };
    try {
      return (await whileLogAway(a, () => eventLog.recordAttempt(entry))) !== undefined;
    } catch (err) {
      // Only an event the log can never store (the edge refuses such ids and types): it goes on unrecorded.
      a.logger.error({ err: errorMessage(err) }, "the event log refused the event's attempt; it goes on unrecorded");
      return true;
    }
  }

  /** Runs the handlers; `startedAt` is set as they start (a source's slot may hold them first). */
  async function dispatch(a: Attempt, outcomes: Record<string, Outcome>, started: { at: number }) {
    const event: AnyEvent = { ...a.data.payload, id: a.data.id, type: a.data.type, account: a.data.account ?? DEFAULT_ACCOUNT };
    const deadline = startHandlerDeadline(options.handlerTimeoutMs ?? 0);
    started.at = Date.now();
    try {
      const ctx = options.makeContext(event, a.number, a.logger, deadline.signal, a.data);
      const onSuccess = async (key: string, durationMs: number) => {
        // With its run, so a success carried to a later attempt (the job's progress) keeps its own row.
        outcomes[key] = { status: "ok", run: { attempt: a.number, of: a.of, startedAt: started.at, durationMs } };
        await a.onSuccess?.(key, outcomes);
      };
      // The handlers join the delivery's trace when the event carries one (tracing on).
      return await withCarriedTrace(a.data.traceparent, () => dispatchEvent(registry, event, ctx, a.done, onSuccess, deadline.signal));
    } finally {
      deadline.clear();
    }
  }

  async function run(a: Attempt): Promise<AttemptResult> {
    if (dropping.gone(a)) return { outcome: "dropped" };
    if (a.delivery && eventLog) {
      const holds = await whileLogAway(a, () => eventLog.holds(a.data.id, a.data.account));
      if (holds === undefined) return { outcome: "unrecorded", ok: {} };
      if (holds.answer) {
        a.logger.info("a delivery of an event the log holds: the same event, not handled again");
        return { outcome: "duplicate" };
      }
    }
    const outcomes: Record<string, Outcome> = { ...a.carried };
    if (a.giveUp !== undefined) {
      if (dropping.gone(a)) return { outcome: "dropped" };
      if (!(await record(a, "failed", outcomes))) return { outcome: "unrecorded", ok: okOutcomes(outcomes) };
      return { outcome: "failed", failed: [], error: new UnrecoverableError(a.giveUp) };
    }
    const started = { at: Date.now() };
    // Asked again as the handlers would start: a slot may have held the event past its account's removal.
    const start = () => (dropping.gone(a) ? Promise.resolve(NOTHING_RAN) : dispatch(a, outcomes, started));
    const result = a.slot ? await a.slot(start) : await start();
    if (result === undefined) return { outcome: "released" };
    // Removed while they ran: what they did is not recorded (the database refuses its rows too).
    if (result === NOTHING_RAN || dropping.gone(a)) return { outcome: "dropped" };
    for (const u of result.unsaved)
      a.logger.warn(
        { handler: u.key, err: errorMessage(u.error) },
        "handler succeeded but its progress was not saved: a retry runs it again",
      );
    const failed = result.failures.map((f) => f.key);
    const givingUp = failed.length > 0 && (a.number >= a.of || result.failures.every((f) => permanent(f.error)));
    const status = failed.length === 0 ? "handled" : givingUp ? "failed" : "received";
    const retryDelayMs = givingUp ? undefined : drawRetryDelay(a.backoff, a.number);
    const nextRetryAt = retryDelayMs === undefined ? undefined : Date.now() + retryDelayMs;
    for (const f of result.failures) {
      const run = { attempt: a.number, of: a.of, startedAt: started.at, durationMs: result.durationsMs[f.key] ?? 0 };
      outcomes[f.key] = { ...failedOutcome(f.error), run: nextRetryAt === undefined ? run : { ...run, nextRetryAt } };
    }
    if (!(await record(a, status, outcomes))) return { outcome: "unrecorded", ok: okOutcomes(outcomes) };
    if (failed.length === 0) return { outcome: "completed" };
    const summary = failureSummary(result.failures);
    const stacks = handlerStacks(result.failures);
    // One line per failed attempt, naming each handler that failed; giving up (a dead letter) is an error.
    const handlers = Object.fromEntries(result.failures.map((f) => [f.key, errorMessage(f.error)]));
    if (givingUp) a.logger.error({ handlers, err: summary }, "event failed for good: a dead letter, it waits for a replay");
    else a.logger.warn({ handlers, err: summary, retryInMs: retryDelayMs }, "event failed, will retry");
    // The job's stacktrace (the dashboard's) shows where each handler failed, not the runner's throw.
    if (givingUp) return { outcome: "failed", failed, error: withHandlerStacks(new UnrecoverableError(summary), stacks), stacks };
    return {
      outcome: "retried",
      retry: failed,
      error: withHandlerStacks(new Error(summary), stacks),
      ...(retryDelayMs === undefined ? {} : { retryDelayMs }),
    };
  }

  return { run, handlerKeys: (type) => registry.handlersFor(type).map((h) => h.key), waitingOnLog: waiting };
}

/** What a dispatch that never started answers (its event was dropped at the start). */
const NOTHING_RAN: DispatchResult = { succeeded: [], failures: [], unsaved: [], durationsMs: {} };

/** Registrations whose first dropped event was logged, at most (then the set starts again). */
const LOGGED_DROPS = 1000;

/** The runner's drops: whether an attempt's event no longer belongs to its account, told once per account registration. */
function createDrops(options: Pick<AttemptRunnerOptions<unknown>, "belongs" | "onDropped" | "logger">) {
  const logged = new Set<string>();
  return {
    gone(a: Pick<Attempt, "data" | "logger">): boolean {
      if (!options.belongs || options.belongs(a.data)) return false;
      options.onDropped?.(a.data);
      const registration = `${a.data.account ?? ""}#${a.data.incarnation ?? ""}`;
      if (!logged.has(registration)) {
        if (logged.size >= LOGGED_DROPS) logged.clear();
        logged.add(registration);
        options.logger.info(
          { account: a.data.account, eventId: a.data.id },
          "dropping the events of an account removed (or added again) since they arrived: none of them runs or is recorded",
        );
      }
      return true;
    },
  };
}

/** An events queue job as attemptOfJob reads it. */
export interface JobAttempts {
  data: { attemptsBefore?: number | undefined; replay?: true | undefined };
  /** BullMQ's count of the job's failed attempts before this one. */
  attemptsMade: number;
  opts: { attempts?: number | undefined };
}

/**
 * Where a job's attempt stands in its run: the one definition of "attempt n of N" that ctx.attempt,
 * log lines, the event log's handler attempts and the console all say.
 * - A first delivery's run spans the ingest stream's first attempt (`attemptsBefore` 1) and the
 *   job that carries it on: attempt 1 ran on the stream, the job's runs are 2 … JOB_ATTEMPTS.
 * - A replay is a run of its own, as a manual retry is in Svix and Hookdeck: 1 … JOB_ATTEMPTS,
 *   its first attempt starting the new run in the log (events.replays counts them).
 * - A failed job retried by hand spent its attempts: one attempt, a run of its own (1 of 1).
 */
export function attemptOfJob(job: JobAttempts): { number: number; of: number; newRound: boolean } {
  const attempts = job.opts.attempts ?? 1;
  if (job.attemptsMade >= attempts) return { number: 1, of: 1, newRound: true };
  const before = job.data.replay === true ? 0 : (job.data.attemptsBefore ?? 0);
  return { number: before + job.attemptsMade + 1, of: before + attempts, newRound: job.data.replay === true && job.attemptsMade === 0 };
}

/**
 * A job that carries a run on after its attempt `made` of `of` (the inverse of attemptOfJob): its
 * first attempt is `made + 1` of `of`, in the same run (the event log's round stays the one it is).
 * What an event the log holds as waiting is enqueued again with once its job was lost.
 */
export function continuingRun(made: number, of: number): { data: { attemptsBefore: number }; attempts: number } {
  // A run recorded as waiting has an attempt left; one at its end (rows from before `of` was kept) still gets its one.
  return { data: { attemptsBefore: made }, attempts: Math.max(1, of - made) };
}

/**
 * The wait before the attempt after attempt `attempt` of a run, drawn by BullMQ's own built-in
 * strategy for `backoff` (EVENT_BACKOFF is its exponential one, with the exponent counted in the
 * run rather than in the job); undefined for any other custom strategy, or none.
 */
export function drawRetryDelay(backoff: number | BackoffOptions | undefined, attempt: number): number | undefined {
  const options = backoff === undefined ? undefined : Backoffs.normalize(backoff);
  if (!options) return undefined;
  const builtin = Backoffs.builtinStrategies[options.type === EVENT_BACKOFF ? "exponential" : options.type];
  const wait = builtin?.(options.delay ?? 0, options.jitter)(attempt);
  return typeof wait === "number" ? wait : undefined;
}

const JITTER = 0.5;

/**
 * The events queue's backoff type. BullMQ asks a custom type of the worker's strategy
 * (events-queue.ts), which hands it the wait the attempt drew from BullMQ's own built-in
 * exponential backoff with these `delay` and `jitter` (drawRetryDelay), so the attempt's record
 * names the time BullMQ schedules. Its exponent is the attempt's number in its run, which spans
 * the ingest stream's first attempt and the job's.
 */
export const EVENT_BACKOFF = "event-attempt";

/** The backoff of every events queue job: BullMQ's exponential from `backoffMs`, with jitter. */
export const eventBackoff = (backoffMs: number) => ({ type: EVENT_BACKOFF, delay: backoffMs, jitter: JITTER });

/** Any other job's retries (the sync queue's): BullMQ's exponential from `backoffMs`, with the same jitter. */
export const exponentialBackoff = (backoffMs: number) => ({ type: "exponential", delay: backoffMs, jitter: JITTER });

/** How often an attempt waiting for the log looks whether its source stops. */
const STOP_CHECK_MS = 200;

/** The log said no for the event's own fault (it can never be stored): waiting cannot fix that. */
const refusedForGood = (err: unknown) => err instanceof EventLogError && err.code === "invalid_event";

/** What an attempt brings to a wait: its log lines, and whether its source stops. */
type WaitingAttempt = Pick<Attempt, "logger" | "stopping">;

/**
 * The attempt runner's wait for an event log that cannot answer (the database away, its disk
 * full): ask again from `firstWaitMs`, doubling to `maxWaitMs`, until it answers or the source
 * stops. A refusal for the event's own fault is thrown at once.
 */
function createLogWait(options: { firstWaitMs: number; maxWaitMs: number }) {
  let waiting = 0;
  return {
    /** What `ask` resolved to once the log answered; undefined when the source stopped first. */
    whileLogAway: async <T>(a: WaitingAttempt, ask: () => Promise<T>): Promise<{ answer: T } | undefined> => {
      let wait = options.firstWaitMs;
      let held = false;
      try {
        for (;;) {
          try {
            const answer = await ask();
            if (held) a.logger.info("the event log answered; the held attempt goes on");
            return { answer };
          } catch (err) {
            if (refusedForGood(err)) throw err;
            if (!held) {
              held = true;
              waiting++;
              a.logger.warn({ err: errorMessage(err) }, "could not reach the event log; holding the attempt until the event log answers");
            }
            // Waited in short steps, so a stop is seen within one.
            for (let left = wait; left > 0 && !a.stopping(); left -= STOP_CHECK_MS)
              await delay(Math.min(left, STOP_CHECK_MS), undefined, { ref: false });
            if (a.stopping()) return undefined;
            wait = Math.min(wait * 2, options.maxWaitMs);
          }
        }
      } finally {
        if (held) waiting--;
      }
    },
    /** How many attempts wait for the log now. */
    waiting: () => waiting,
  };
}
