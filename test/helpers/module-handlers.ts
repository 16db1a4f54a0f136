import type { AnyEvent } from "../../src/events/catalog.js";
import type { HandlerMap, Handlers } from "../../src/events/dispatch.js";
import type { HandlerContext } from "../../src/worker/handlers.js";

/**
 * A handler map as a JavaScript HANDLERS_MODULE may write it: any type as a key, each event as
 * delivered. The TypeScript map refuses a type the catalog does not know (a typo); these tests
 * use such types on purpose, so that no built-in handler runs beside theirs.
 */
export const moduleHandlers = <Ctx = HandlerContext>(map: Record<string, Handlers<AnyEvent, Ctx>>): HandlerMap<Ctx> => map;
