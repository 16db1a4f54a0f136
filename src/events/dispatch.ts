import { EventDataError, isKnownEventType, parseKnownEvent, type AnyEvent } from "./catalog.js";
import { boundedErrorText, boundedStack, MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_STACK_CHARS, HandlerTimeoutError } from "./errors.js";
import type { Handler, HandlerRegistry, RegisteredHandler } from "./registry.js";

export interface HandlerFailure {
  key: string;
  error: unknown;
}

export interface DispatchResult {
  /** Keys of the handlers that succeeded in this run. */
  succeeded: string[];
  /** Handlers that threw. */
  failures: HandlerFailure[];
  /**
   * Handlers that succeeded but whose success `onSuccess` could not record: they are in
   * `succeeded`, never in `failures`, and may run again if the event is retried.
   */
  unsaved: HandlerFailure[];
  /** How long each handler that was started ran, in whole milliseconds, by key (one cut off by the deadline: until then). */
  durationsMs: Record<string, number>;
}

/**
 * Runs every handler for the event except those already done (on an earlier attempt), all of
 * them even when some fail, and reports each outcome; one failing handler never stops another.
 * A known type is validated first and its handlers get the typed event; '*' handlers get it as is.
 * Data that does not match its type's schema fails that type's handlers (with the EventDataError,
 * a permanent failure) without running them, while '*' handlers still get the event as is, as a
 * catch-all does. `onSuccess` records a success (for a retry to skip it) with how long the handler
 * ran; its own failure is reported apart.
 * Once `deadline` is aborted, every handler still running fails with its reason (a
 * HandlerTimeoutError) and the dispatch returns without waiting for them.
 */
export async function dispatchEvent<Ctx>(
  registry: HandlerRegistry<Ctx>,
  event: AnyEvent,
  ctx: Ctx,
  alreadyDone: ReadonlySet<string> = new Set(),
  onSuccess?: (key: string, durationMs: number) => Promise<void>,
  deadline?: AbortSignal,
): Promise<DispatchResult> {
  const { typed, dataError } = typedEvent(event);
  const pending = registry.handlersFor(event.type).filter((h) => !alreadyDone.has(h.key));
  const result: DispatchResult = { succeeded: [], failures: [], unsaved: [], durationsMs: {} };
  await Promise.all(
    pending.map(async ({ key, type, handler }) => {
      if (dataError && type !== "*") {
        result.failures.push({ key, error: dataError });
        result.durationsMs[key] = 0;
        return;
      }
      const started = performance.now();
      const ran = () => (result.durationsMs[key] = Math.round(performance.now() - started));
      try {
        const run = (handler as (e: unknown, c: Ctx) => unknown)(type === "*" ? event : typed, ctx);
        await untilAborted(Promise.resolve(run), deadline);
      } catch (error) {
        ran();
        result.failures.push({ key, error });
        return;
      }
      result.succeeded.push(key);
      // Outside the handler's try: a failed save must not turn its success into a failure.
      try {
        await onSuccess?.(key, ran());
      } catch (error) {
        result.unsaved.push({ key, error });
      }
    }),
  );
  return result;
}

/** The event as its type's handlers get it, or why its data does not match the type's schema. */
function typedEvent(event: AnyEvent): { typed: unknown; dataError?: EventDataError } {
  if (!isKnownEventType(event.type)) return { typed: event };
  try {
    return { typed: parseKnownEvent(event.type, event) };
  } catch (err) {
    if (err instanceof EventDataError) return { typed: undefined, dataError: err };
    throw err;
  }
}

/** A handler's error as the event log and the logs show it: bounded (a message may quote a whole payload). */
export function errorMessage(err: unknown): string {
  return boundedErrorText(err instanceof Error ? `${err.name}: ${err.message}` : String(err), MAX_ERROR_MESSAGE_CHARS);
}

/** A handler's error's stack (bounded, its frames kept), pointing at the handler's code; undefined for a non-Error throw. */
function errorStack(err: unknown): string | undefined {
  if (!(err instanceof Error) || typeof err.stack !== "string" || err.stack === "") return undefined;
  return boundedStack(err.stack);
}

/** A failed handler's outcome as the event log keeps it: the message, and the stack when there is one. */
export function failedOutcome(err: unknown): { status: "failed"; error: string; stack?: string } {
  const stack = errorStack(err);
  return stack === undefined ? { status: "failed", error: errorMessage(err) } : { status: "failed", error: errorMessage(err), stack };
}

/** The stacks of the handler errors an event's failure sums up, each under its handler's key. */
export function handlerStacks(failures: readonly HandlerFailure[]): string {
  const stacks = failures.map((f) => `[${f.key}] ${errorStack(f.error) ?? errorMessage(f.error)}`).join("\n");
  return boundedErrorText(stacks, 2 * MAX_ERROR_STACK_CHARS);
}

/** What an event's failure says: each failed handler's key and message, bounded as one message. */
export function failureSummary(failures: readonly HandlerFailure[]): string {
  return boundedErrorText(failures.map((f) => `${f.key}: ${errorMessage(f.error)}`).join("; "), MAX_ERROR_MESSAGE_CHARS);
}

/**
 * Gives the error that fails an event's job the handlers' stacks (handlerStacks) in place of its
 * own: BullMQ keeps a failed job's `err.stack` (job.stacktrace, shown by the dashboard), which
 * would otherwise point at the worker's throw rather than at the code that failed.
 */
export function withHandlerStacks<E extends Error>(err: E, stacks: string | undefined): E {
  if (stacks) err.stack = `${err.name}: ${boundedErrorText(err.message, 1024)}\n${stacks}`;
  return err;
}

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
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
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

/**
 * The registry as dispatch sees it, each handler given its own context: `bind(ctx, key, event)`
 * turns the attempt's shared context into the one that handler gets (durable steps are keyed by
 * handler). Registration goes to the underlying registry; keys and order are unchanged.
 */
export function perHandlerContext<Base, Ctx>(
  registry: HandlerRegistry<Ctx>,
  bind: (ctx: Base, key: string, event: AnyEvent) => Ctx,
): HandlerRegistry<Base> {
  const bound = ({ handler, ...about }: RegisteredHandler<Ctx>): RegisteredHandler<Base> => {
    const call = handler as (event: AnyEvent, ctx: Ctx) => Promise<void> | void;
    const withContext: Handler<AnyEvent, Base> = (event, ctx) => call(event, bind(ctx, about.key, event));
    return { ...about, handler: withContext };
  };
  return {
    on: () => {
      throw new TypeError("register handlers on the underlying registry");
    },
    onAny: () => {
      throw new TypeError("register handlers on the underlying registry");
    },
    use: () => {
      throw new TypeError("register handlers on the underlying registry");
    },
    handlersFor: (type) => registry.handlersFor(type).map(bound),
    registered: () => registry.registered().map(bound),
  };
}
