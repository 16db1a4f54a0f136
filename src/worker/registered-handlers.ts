import type { Logger } from "pino";
import type { HandlerKeyRename } from "../mirror/event-log.js";
import { isKnownEventType, KNOWN_EVENT_TYPES, CHANGE_EVENT_TYPES } from "../events/catalog.js";
import type { RegisteredHandler } from "../events/registry.js";
import type { StepStore } from "../mirror/step-store.js";

type About = Pick<RegisteredHandler<unknown>, "key" | "source" | "type" | "name">;

const KNOWN_TYPES: readonly string[] = [...KNOWN_EVENT_TYPES, ...CHANGE_EVENT_TYPES, "*"];

/**
 * Logs what one source (a HANDLERS_MODULE, a map given to createService) registered: its types
 * and handler names and keys, and a warning naming each type the upstream and the mirror never
 * send (a typo such as `order.craeted` would otherwise never run, silently).
 */
export function logRegisteredHandlers(logger: Logger, source: string, added: readonly About[]): void {
  const unknown = [...new Set(added.map((h) => h.type))].filter((t) => t !== "*" && !isKnownEventType(t) && !KNOWN_TYPES.includes(t));
  if (unknown.length > 0)
    logger.warn(
      { source, unknown, known: KNOWN_TYPES },
      `handlers from ${source} for event types nobody sends today: ${unknown.join(", ")} (they run only if such an event arrives)`,
    );
  logger.info({ source, handlers: added.map(({ type, name, key }) => ({ type, name, key })) }, "handlers registered");
}

/**
 * The renames from positional keys (`<source>:<type>:0`, the first handler of a type from one
 * source, the only one a handler map could hold) to named ones, where the handler is certain: a
 * type with one handler from that source. A type that now has several is left alone (which of
 * them was the first is not known); its old steps are left to retention.
 */
export function positionalRenames(handlers: readonly About[]): HandlerKeyRename[] {
  const bySourceType = new Map<string, About[]>();
  for (const h of handlers) {
    const group = `${h.source}:${h.type}`;
    bySourceType.set(group, [...(bySourceType.get(group) ?? []), h]);
  }
  return [...bySourceType].flatMap(([group, [only, ...others]]) =>
    only && others.length === 0 ? [{ from: `${group}:0`, to: only.key }] : [],
  );
}

/**
 * Moves step records from positional keys to the handlers' named keys, once (the worker's
 * start-up, before any handler runs: only then is the module, and so each handler's name, known).
 */
export async function adoptNamedHandlerKeys(handlers: readonly About[], steps: Pick<StepStore, "renameHandlerKeys">, logger: Logger) {
  for (const rename of await steps.renameHandlerKeys(positionalRenames(handlers)))
    logger.info(rename, "step records moved from a handler's position to its name");
}
