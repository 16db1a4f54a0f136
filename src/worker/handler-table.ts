import type { Logger } from "pino";
import type { AnyEvent } from "../events/catalog.js";
import { perHandlerContext } from "../events/per-handler-context.js";
import { createHandlerRegistry, type HandlerRegistry } from "../events/registry.js";
import type { StepStore } from "../mirror/step-store.js";
import type { MirrorStore } from "../mirror/store.js";
import { traceHandlers, type Tracing } from "../tracing/tracing.js";
import type { ApiClient } from "../upstream/index.js";
import { apiNotConfigured } from "./api-not-configured.js";
import { createDurableSteps } from "./durable-steps.js";
import type { EventHandlers, HandlerContext, SharedHandlerContext } from "./handler-context.js";
import { logRegisteredHandlers } from "./registered-handlers.js";
import { createReloadableRegistry, type ReloadableRegistry } from "./reloadable-registry.js";
import type { RefreshQueue } from "../sync/refresh-queue.js";
import { createSyncHandlers } from "../sync/sync-handlers.js";
import { stepAwareApi } from "./step-aware-api.js";

export interface HandlerTable extends ReloadableRegistry<HandlerContext> {
  /** The registry as the attempt runner dispatches through it: each handler gets its own `step` and `api`. */
  dispatch: HandlerRegistry<SharedHandlerContext>;
}

/**
 * The handlers the worker runs: the built-in sync handlers and the user's, each with a durable
 * `step` of its own and the API. Built whole again when `npm run dev` reloads a changed
 * HANDLERS_MODULE (`replace`).
 */
export function createHandlerTable(deps: {
  logger: Logger;
  mirror: MirrorStore;
  /** Durable steps' results (ctx.step). */
  steps: StepStore;
  api: ApiClient | undefined;
  /** Where the built-in handlers note the records an event names, to be read again. */
  refresh: RefreshQueue;
  handlers: readonly EventHandlers[];
  tracing?: Tracing;
}): HandlerTable {
  const { logger, mirror, api, tracing } = deps;
  // Each handler gets its own `step` (steps are keyed by handler) and, inside a step that runs
  // again after an unrecorded run, an API whose writes look for their own effect first.
  const steps = createDurableSteps(deps.steps);
  const handlerApi = api ? stepAwareApi(api, { current: steps.current, mirror }) : apiNotConfigured();
  const withSteps = (ctx: SharedHandlerContext, handlerKey: string, event: AnyEvent): HandlerContext => ({
    ...ctx,
    api: handlerApi,
    step: steps.forHandler({ eventId: event.id, handlerKey, attempt: ctx.attempt, logger: ctx.logger }),
  });
  const table = createReloadableRegistry((handlers) => {
    const built = createHandlerRegistry<HandlerContext>();
    const use = (map: EventHandlers, source: string) => built.use(map, source, tracing ? traceHandlers(tracing.tracer) : undefined);
    use(createSyncHandlers(deps.refresh, { withApi: api !== undefined }), "sync");
    handlers.forEach((map, i) => {
      const source = handlers.length > 1 ? `user${i}` : "user";
      logRegisteredHandlers(logger, source, use(map, source));
    });
    return built;
  }, deps.handlers);
  return { ...table, dispatch: perHandlerContext(table.registry, withSteps) };
}
