import type { Logger } from "pino";
import { onChange as onChangeWith, type ChangeEvent, type ChangeField, type ChangeFilter, type ChangeKind } from "../events/catalog.js";
import type { EventFor, HandledType, Handler, HandlerMap } from "../events/registry.js";
import type { MirrorStore } from "../mirror/mirror-store.js";
import type { ApiClient } from "../upstream/client.js";
import type { StepFunction } from "./durable-steps.js";

/** What every handler receives beside the event. */
export interface HandlerContext {
  /**
   * The upstream client. On a service without one (API_BASE_URL/API_KEY not set) every call
   * fails the event for good with ApiNotConfiguredError, naming the call.
   */
  api: ApiClient;
  mirror: MirrorStore;
  /**
   * A durable step: runs `fn` once per (event, handler, name) and stores its JSON result; a retry
   * or a replay of the event gets the stored result back without running `fn` (docs/handlers.md).
   *
   * @example
   * const booking = await ctx.step("create booking", () => ctx.api.createBooking(input));
   */
  step: StepFunction;
  /** A child logger bound to the event's id and type. */
  logger: Logger;
  /**
   * 1 on the event's first attempt, 2 on its first retry, …; a replay numbers on from the event's
   * attempts: the number its log lines and the console's attempt rows show.
   */
  attempt: number;
  /**
   * Aborted when the attempt's deadline (HANDLER_TIMEOUT_MS) passes: pass it to fetch and other
   * cancellable work. The attempt then counts as a retryable failure whether or not the handler
   * stops; its result, if it ever ends, is ignored.
   */
  signal: AbortSignal;
}

/** One handler of type `T` (a known type, a change type or '*'), with the service's context. */
export type EventHandler<T extends HandledType> = Handler<EventFor<T>, HandlerContext>;
/** The shape of a HANDLERS_MODULE's default export and of `createService({ handlers })`. */
export type EventHandlers = HandlerMap<HandlerContext>;
export type { StepFunction } from "./durable-steps.js";

/** The context an attempt makes for all its handlers, before each gets its own `step` and `api`. */
export type SharedHandlerContext = Omit<HandlerContext, "step" | "api">;

/**
 * A handler map entry that runs `handler` only for the changes of `kind` matching `filter`: the
 * field changed, from `from` (when given) to `to` (when given), made by one of `source` (when
 * given). `field` is one the kind's record has; `from` and `to` have that field's type.
 *
 * @example
 * const handlers: EventHandlers = {
 *   ...onChange("order", { field: "status", to: "READY", source: ["webhook", "reconcile"] }, async (event, { logger }) => {
 *     logger.info({ order: event.data.id, was: event.data.before?.status }, "order ready");
 *   }),
 * };
 */
export const onChange: <K extends ChangeKind, F extends ChangeField<K>>(
  kind: K,
  filter: ChangeFilter<K, F>,
  handler: Handler<ChangeEvent<K>, HandlerContext>,
) => Record<`change.${K}`, Handler<ChangeEvent<K>, HandlerContext>> = onChangeWith;
