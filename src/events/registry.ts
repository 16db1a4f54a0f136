import type { AnyEvent, EventOf, KnownEventType, ChangeEventOf, ChangeEventType } from "./catalog.js";

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
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// Positional keys (`user:order.created:0`) are still renamed from at start-up
// (worker/handlers.ts): a name of digits would read as one.
const NUMBER = /^\d+$/;

const handlerKey = (source: string, type: string, name: string) => (name === type ? `${source}:${type}` : `${source}:${type}:${name}`);

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
    let name: string;
    let handler: Handler<never, Ctx>;
    if (typeof entry === "function") {
      handler = entry as Handler<never, Ctx>;
      name = entry.name || type;
    } else if (isNamedHandler(entry)) {
      ({ name, handle: handler } = entry as NamedHandler<never, Ctx>);
    } else {
      throw new TypeError(`${which} must be a function or { name, handle }`);
    }
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
