import { HandlerTimeoutError } from "./handler-timeout-error.js";

/** The deadline of one attempt's handlers: `signal` is aborted (with a HandlerTimeoutError) when it passes. */
export interface HandlerDeadline {
  signal: AbortSignal;
  /** Call once the attempt ended, so no timer outlives it. */
  clear(): void;
}

/** Starts a deadline `timeoutMs` from now; 0 means none (the signal is never aborted). */
export function startHandlerDeadline(timeoutMs: number): HandlerDeadline {
  const controller = new AbortController();
  if (timeoutMs <= 0) return { signal: controller.signal, clear: () => undefined };
  const timer = setTimeout(() => controller.abort(new HandlerTimeoutError(timeoutMs)), timeoutMs);
  // A deadline alone never keeps the process alive (a graceful stop has its own).
  timer.unref();
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

/**
 * `work`, or a rejection with the signal's reason once it is aborted, whichever comes first. The
 * work is not (cannot be) cancelled: a handler that ignores the signal runs on unobserved, and its
 * eventual outcome is dropped.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      work.catch(() => undefined);
      reject(signal.reason as Error);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
