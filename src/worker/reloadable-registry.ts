import type { HandlerRegistry, RegisteredHandler } from "../events/registry.js";
import type { EventHandlers } from "./handler-context.js";

export interface ReloadableRegistry<Ctx> {
  /** Dispatch reads through this one: it always asks the registry built last. */
  registry: HandlerRegistry<Ctx>;
  /**
   * Builds a registry from `handlers` and swaps it in: events dispatched from then on run the new
   * handlers; attempts already running finish with the old ones. A build that throws swaps nothing.
   */
  replace(handlers: readonly EventHandlers[]): RegisteredHandler<Ctx>[];
}

/** The worker's handler table, rebuilt whole when `npm run dev` reloads a changed HANDLERS_MODULE. */
export function createReloadableRegistry<Ctx>(
  build: (handlers: readonly EventHandlers[]) => HandlerRegistry<Ctx>,
  initial: readonly EventHandlers[],
): ReloadableRegistry<Ctx> {
  let current = build(initial);
  const registry: HandlerRegistry<Ctx> = {
    on: (type: string, handlers: never, source?: string) => current.on(type, handlers, source),
    onAny: (handlers, source) => current.onAny(handlers, source),
    use: (map, source, wrap) => current.use(map, source, wrap),
    handlersFor: (type) => current.handlersFor(type),
    registered: () => current.registered(),
  };
  return {
    registry,
    replace(handlers) {
      current = build(handlers);
      return current.registered();
    },
  };
}
