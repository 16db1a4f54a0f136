import type { AnyEvent } from "./catalog.js";
import type { Handler, HandlerRegistry, RegisteredHandler } from "./registry.js";

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
