import {
  EventDataError,
  isKnownEventType,
  parseKnownEvent,
  type AnyEvent,
  type EventOf,
  type KnownEventType,
  type ChangeEventOf,
  type ChangeEventType,
} from "./catalog.js";
import { boundedErrorText, boundedStack, MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_STACK_CHARS, HandlerTimeoutError } from "./errors.js";
import { untilAborted } from "../base/deadline.js";
import type { Tracer } from "@opentelemetry/api";
import { inSpan } from "../tracing/tracing.js";
import { CONTROL, idProblem, shortened } from "../base/text.js";

export type Handler<E, Ctx> = (event: E, ctx: Ctx) => Promise<void> | void;

/** A handler under a name of your choosing: its key (step records, retries) follows the name, not its place. */
export interface NamedHandler<E, Ctx> {
  name: string;
  handle: Handler<E, Ctx>;
}

/** What a handler map holds for one type: a function, a `{ name, handle }`, or several of them. */
export type Handlers<E, Ctx> = Handler<E, Ctx> | NamedHandler<E, Ctx> | readonly (Handler<E, Ctx> | NamedHandler<E, Ctx>)[];

/** A type a handler map may name: a known event type, a change type, or '*' for every event. */
export type HandledType = KnownEventType | ChangeEventType | "*";

/** The event a handler of `T` receives: typed for a known or change type, as delivered for '*'. */
export type EventFor<T extends HandledType> = T extends KnownEventType
  ? EventOf<T>
  : T extends ChangeEventType
    ? ChangeEventOf<T>
    : AnyEvent;

/**
 * A map of event type (or '*') to its handlers: the shape of a HANDLERS_MODULE's default export.
 * No other key: a misspelled type is a compile error at the key. A type the catalog does not know
 * goes to '*' (or to `HandlerRegistry.on`), where the event comes as delivered.
 */
export type HandlerMap<Ctx> = { [T in HandledType]?: Handlers<EventFor<T>, Ctx> };

export interface RegisteredHandler<Ctx> {
  /**
   * `<source>:<type>` for a handler named after its type, else `<source>:<type>:<name>`: which
   * handlers already succeeded, and whose step records are whose, is remembered by key.
   */
  key: string;
  type: string;
  name: string;
  /** Who registered it: `sync`, `user` (HANDLERS_MODULE), `user0`, `user1`… (several maps). */
  source: string;
  handler: Handler<never, Ctx>;
}

/** Wraps a handler as it is registered (tracing gives each a span); its key is already made. */
export type WrapHandler<Ctx> = (handler: Handler<never, Ctx>, about: Omit<RegisteredHandler<Ctx>, "handler">) => Handler<never, Ctx>;

/**
 * Runs each handler, as the registry adds it, in a span of its own ("handler <source> <type>"), a
 * child of the delivery's trace when the event carries one. Used only when tracing is on; the
 * registry names handlers before wrapping them, so keys are the same with tracing on or off.
 */
export function traceHandlers<Ctx>(tracer: Tracer): WrapHandler<Ctx> {
  return (handler, { source, type, key }) => {
    const name = `handler ${source} ${type}`;
    const attributes = { "svc.handler.source": source, "svc.event.type": type, "svc.handler.key": key };
    return (event: never, ctx: Ctx) =>
      inSpan(tracer, name, { attributes }, async (span) => {
        const { id } = event as { id?: unknown };
        if (typeof id === "string") span.setAttribute("svc.event.id", id);
        await handler(event, ctx);
      });
  };
}

export interface HandlerRegistry<Ctx> {
  on<T extends KnownEventType>(type: T, handlers: Handlers<EventOf<T>, Ctx>, source?: string): void;
  on<T extends ChangeEventType>(type: T, handlers: Handlers<ChangeEventOf<T>, Ctx>, source?: string): void;
  on(type: string, handlers: Handlers<AnyEvent, Ctx>, source?: string): void;
  /** Receives every event, known and unknown types alike (like octokit's onAny). */
  onAny(handlers: Handlers<AnyEvent, Ctx>, source?: string): void;
  /** Adds every entry of a handler map under one source name; returns what it added. */
  use(map: HandlerMap<Ctx>, source: string, wrap?: WrapHandler<Ctx>): RegisteredHandler<Ctx>[];
  /** The handlers for `type` then the '*' handlers, in registration order. */
  handlersFor(type: string): RegisteredHandler<Ctx>[];
  /** Every handler, in registration order. */
  registered(): RegisteredHandler<Ctx>[];
}

/** Longest handler name: keys stay short enough to type (`replay --handler`) and to show. */
const MAX_HANDLER_NAME_LENGTH = 64;
// Positional keys (`user:order.created:0`) are still renamed from at start-up
// (worker/handlers.ts): a name of digits would read as one.
const NUMBER = /^\d+$/;

const handlerKey = (source: string, type: string, name: string) => (name === type ? `${source}:${type}` : `${source}:${type}:${name}`);

/** The event type a handler key names (`user:order.created:notify` → `order.created`); undefined for what is no key. */
export function handlerKeyType(key: string): string | undefined {
  const [source, type] = key.split(":");
  return source && type ? type : undefined;
}

/**
 * Each handler `handlers` holds for `type`, with its name: the one given (`{ name, handle }`),
 * else the function's own name (a function written inline in a map is named after its key by
 * JavaScript), else the type. Throws a TypeError saying which handler and what to do.
 */
function named<Ctx>(type: string, handlers: Handlers<never, Ctx>, source: string) {
  const several = Array.isArray(handlers);
  const list: readonly unknown[] = several ? handlers : [handlers];
  return list.map((entry, i) => {
    const which = `the handler ${several ? `#${i} ` : ""}for "${type}" from ${source}`;
    if (typeof entry !== "function" && !isNamedHandler(entry)) throw new TypeError(`${which} must be a function or { name, handle }`);
    const { name, handle: handler } =
      typeof entry === "function"
        ? { name: entry.name || type, handle: entry as Handler<never, Ctx> }
        : (entry as NamedHandler<never, Ctx>);
    if (name.length === 0 || name.length > MAX_HANDLER_NAME_LENGTH || CONTROL.test(name) || NUMBER.test(name))
      throw new TypeError(
        `${which} has the name ${JSON.stringify(name.slice(0, MAX_HANDLER_NAME_LENGTH))}: a name is 1 to ${MAX_HANDLER_NAME_LENGTH} characters, ` +
          "no control characters, not only digits (give one with { name, handle })",
      );
    return { name, handler };
  });
}

function isNamedHandler(entry: unknown): boolean {
  if (typeof entry !== "object" || entry === null) return false;
  const { name, handle } = entry as Record<string, unknown>;
  return typeof name === "string" && typeof handle === "function";
}

/** A table of handlers, keyed by event type; no switch over types anywhere. */
export function createHandlerRegistry<Ctx>(): HandlerRegistry<Ctx> {
  const byType = new Map<string, RegisteredHandler<Ctx>[]>();
  const all: RegisteredHandler<Ctx>[] = [];
  const add = (type: string, handlers: Handlers<never, Ctx>, source: string, wrap?: WrapHandler<Ctx>) => {
    const list = byType.get(type) ?? [];
    const added = named(type, handlers, source).map(({ name, handler }) => {
      const key = handlerKey(source, type, name);
      // The event log keeps each handler's outcome under its key, and the filters and replays find it by it: an id like any other.
      const problem = idProblem(key);
      if (problem)
        throw new TypeError(
          `the handler key ${JSON.stringify(shortened(key, 80))} (for "${shortened(type, 80)}" from ${source}) ${problem}`,
        );
      if (list.some((h) => h.key === key))
        throw new TypeError(`two handlers for "${type}" from ${source} are named "${name}": give each its own name with { name, handle }`);
      const about = { key, type, name, source };
      const entry = { ...about, handler: wrap ? wrap(handler, about) : handler };
      list.push(entry);
      return entry;
    });
    byType.set(type, list);
    all.push(...added);
    return added;
  };
  return {
    on(type: string, handlers: Handlers<never, Ctx>, source = "app") {
      add(type, handlers, source);
    },
    onAny(handlers, source = "app") {
      add("*", handlers, source);
    },
    use(map, source, wrap) {
      // A JavaScript module may hold an undefined entry.
      return Object.entries(map as Record<string, Handlers<never, Ctx> | undefined>).flatMap(([type, handlers]) =>
        handlers ? add(type, handlers, source, wrap) : [],
      );
    },
    handlersFor(type) {
      return [...(type === "*" ? [] : (byType.get(type) ?? [])), ...(byType.get("*") ?? [])];
    },
    registered: () => [...all],
  };
}

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
  const refuse = () => {
    throw new TypeError("register handlers on the underlying registry");
  };
  return {
    on: refuse,
    onAny: refuse,
    use: refuse,
    handlersFor: (type) => registry.handlersFor(type).map(bound),
    registered: () => registry.registered().map(bound),
  };
}
