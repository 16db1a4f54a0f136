import type { Logger } from "pino";
import type { AnyEvent, EventOf, KnownEventType } from "../events/catalog.js";
import type { Handler, HandlerMap } from "../events/registry.js";
import type { MirrorStore } from "../mirror/store.js";
import type { ApiClient } from "../upstream/index.js";

/** What every handler receives beside the event. */
export interface HandlerContext {
  /** The upstream client (undefined when API_BASE_URL/API_KEY are not configured). */
  api: ApiClient | undefined;
  mirror: MirrorStore;
  /** A child logger bound to the event's id and type. */
  logger: Logger;
  /** 1 on the first run of the event's job, 2 on its first retry, … */
  attempt: number;
}

export type EventHandler<T extends KnownEventType | "*"> = Handler<T extends KnownEventType ? EventOf<T> : AnyEvent, HandlerContext>;
/** The shape of a HANDLERS_MODULE's default export and of `createService({ handlers })`. */
export type EventHandlers = HandlerMap<HandlerContext>;
