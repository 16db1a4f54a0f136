// Deadlines and aborts: racing a wait against a point in time or a signal. Generic, so every layer
// that waits (the edge's Redis appends, upstream reads, the stop) shares one rule.
import { codedError } from "../errors.js";

/**
 * A wait that did not end in time, or whose work failed: what a caller answers 503 for and retries
 * later. Layers name their own kind (the queue's QueueUnavailableError extends it).
 */
export class UnavailableError extends codedError<string>("unavailable", {
  status: 503,
  message: "a dependency did not answer in time; retry later",
}) {}

export type UnavailableClass = new (message: string, options?: ErrorOptions) => UnavailableError;

/**
 * Races `work` against a deadline. A timed-out enqueue may still land later; that is safe because
 * the sender retries after our 503 and the retry is deduplicated by event id.
 */
export async function withTimeout<T>(
  work: Promise<T>,
  ms: number,
  what: string,
  Unavailable: UnavailableClass = UnavailableError,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Unavailable(`${what} timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } catch (err) {
    if (err instanceof UnavailableError) throw err;
    throw new Unavailable(`${what} failed: ${(err as Error).message}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
}

/** The reason a signal aborted with, as an Error (wrapped when it is none). */
export const abortError = (signal: AbortSignal | undefined) =>
  signal?.reason instanceof Error ? signal.reason : new Error("aborted", { cause: signal?.reason });

/**
 * `work`, or a rejection with the signal's reason (abortError) as soon as it aborts, whichever
 * comes first: for a wait that cannot be cut itself (a handler that ignores its signal; a Redis
 * command queued while Redis is away, which ioredis holds until it is back). The work is not (cannot
 * be) cancelled: it runs on unobserved, and its eventual outcome is dropped.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      work.catch(() => undefined);
      reject(abortError(signal));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    // An abort before the call fires no event: it rejects here, before the work can settle.
    if (signal.aborted) onAbort();
  });
}

/**
 * One point in time that every part of a stop shares: each part gets what is left of it, never a
 * span of its own, so parts stopping one after another cannot add up past it.
 */
export interface Deadline {
  /** Epoch ms. */
  readonly at: number;
  /** Ms left (0 once passed). */
  left(): number;
  /** Aborts when the deadline passes (at once if it has): what a wait that must end by then listens to. */
  readonly signal: AbortSignal;
  /** `work` within what is left; rejects (UnavailableError) once the deadline passes first. */
  within<T>(work: Promise<T>, what: string): Promise<T>;
  /** Waits for `work` within what is left: true when it did not end (or failed) before the deadline passed. */
  missed(work: Promise<unknown>, what: string): Promise<boolean>;
  /** A later deadline, `ms` past this one (not past now): the closes after a drain. */
  plus(ms: number): Deadline;
}

/** The deadline `ms` from now (`at` epoch ms, for a deadline fixed elsewhere). */
export function deadlineIn(ms: number, now: number = Date.now()): Deadline {
  return deadlineAt(now + Math.max(0, ms));
}

/** The stop of a part asked to stop without a deadline (a test, a library caller): 3 s from now. */
export const defaultStopDeadline = (): Deadline => deadlineIn(3000);

function deadlineAt(at: number): Deadline {
  const left = () => Math.max(0, at - Date.now());
  let signal: AbortSignal | undefined;
  return {
    at,
    left,
    // Made on first use: a timer per deadline only where something listens.
    get signal() {
      signal ??= AbortSignal.timeout(Math.max(1, left()));
      return signal;
    },
    within: (work, what) => withTimeout(work, left(), what),
    missed: (work, what) =>
      withTimeout(work, left(), what).then(
        () => false,
        () => true,
      ),
    plus: (ms) => deadlineAt(at + ms),
  };
}

/**
 * Waits `ms`, or rejects with the signal's reason as soon as it aborts (no timer left behind): the
 * client's backoffs and the budget's waits end at once when their caller stops (a worker's
 * shutdown deadline, a Ctrl-C), wherever they are.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError(signal));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
