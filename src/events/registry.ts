import type { AnyEvent, EventOf, KnownEventType } from "./catalog.js";
import type { ChangeEventOf, ChangeEventType } from "./change-events.js";

export type Handler<E, Ctx> = (event: E, ctx: Ctx) => Promise<void> | void;

/** A map of event type (or '*') to handler: the shape of a HANDLERS_MODULE's default export. */
export type HandlerMap<Ctx> = {
  [T in KnownEventType]?: Handler<EventOf<T>, Ctx>;
} & {
  [T in ChangeEventType]?: Handler<ChangeEventOf<T>, Ctx>;
} & {
  "*"?: Handler<AnyEvent, Ctx>;
  [type: string]: Handler<never, Ctx> | undefined;
};

export interface RegisteredHandler<Ctx> {
  /** Stable across retries: which handlers already succeeded is remembered by key. */
  key: string;
  type: string;
  handler: Handler<never, Ctx>;
}

export interface HandlerRegistry<Ctx> {
  on<T extends KnownEventType>(type: T, handler: Handler<EventOf<T>, Ctx>, source?: string): void;
  on<T extends ChangeEventType>(type: T, handler: Handler<ChangeEventOf<T>, Ctx>, source?: string): void;
  on(type: string, handler: Handler<AnyEvent, Ctx>, source?: string): void;
  /** Receives every event, known and unknown types alike (like octokit's onAny). */
  onAny(handler: Handler<AnyEvent, Ctx>, source?: string): void;
  /** Adds every entry of a handler map under one source name. */
  use(map: HandlerMap<Ctx>, source: string): void;
  /** The handlers for `type` then the '*' handlers, in registration order. */
  handlersFor(type: string): RegisteredHandler<Ctx>[];
}

/** A table of handlers, keyed by event type; no switch over types anywhere. */
export function createHandlerRegistry<Ctx>(): HandlerRegistry<Ctx> {
  const byType = new Map<string, RegisteredHandler<Ctx>[]>();
  const add = (type: string, handler: Handler<never, Ctx>, source: string) => {
    if (typeof handler !== "function") throw new TypeError(`handler for "${type}" from ${source} must be a function`);
    const list = byType.get(type) ?? [];
    const sameSource = list.filter((h) => h.key.startsWith(`${source}:`)).length;
    list.push({ key: `${source}:${type}:${sameSource}`, type, handler });
    byType.set(type, list);
  };
  const registry: HandlerRegistry<Ctx> = {
    on(type: string, handler: Handler<never, Ctx>, source = "app") {
      add(type, handler, source);
    },
    onAny(handler, source = "app") {
      add("*", handler, source);
    },
    use(map, source) {
      for (const [type, handler] of Object.entries(map)) if (handler) add(type, handler, source);
    },
    handlersFor(type) {
      return [...(type === "*" ? [] : (byType.get(type) ?? [])), ...(byType.get("*") ?? [])];
    },
  };
  return registry;
}
