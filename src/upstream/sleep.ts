// Waits that a signal ends: the client's backoffs and budget waits end at once when its caller
// stops (a worker's shutdown deadline, a Ctrl-C), wherever they are.

const abortError = (signal: AbortSignal | undefined) =>
  signal?.reason instanceof Error ? signal.reason : new Error("aborted", { cause: signal?.reason });

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts (no timer left behind). */
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

/**
 * `work`, or the signal's reason as soon as it aborts: for a wait that cannot be cut itself (a
 * Redis command queued while Redis is away, which ioredis holds until it is back).
 */
export function unlessAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(abortError(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** One signal for two (either may be absent): aborted when either is. */
export function eitherSignal(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  return a && b ? AbortSignal.any([a, b]) : (a ?? b);
}
