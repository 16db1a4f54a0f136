import { CHANGE_SOURCES, changeSourcesOf, isChangeEventType, type ChangeEventType, type ChangeSource } from "./catalog.js";

// Who receives a change: the one answer the mirror's writers ask before a change becomes an event
// (an outbox row, relayed, queued, run and logged). Derived from the handler maps the workers
// run, since they are the processes that run change events' handlers.

/** Whether some handler would receive a change of `type` made by `source`. */
export type ListensToChange = (type: ChangeEventType, source: ChangeSource) => boolean;

/** Every change is received: the answer when the handlers are not known (a writer built without them). */
export const EVERY_CHANGE: ListensToChange = () => true;

/** The functions a handler map entry holds: a function, a `{ name, handle }`, or several. */
function entryHandlers(entry: unknown): unknown[] {
  const list: readonly unknown[] = Array.isArray(entry) ? entry : [entry];
  return list.map((h) => (typeof h === "object" && h !== null && "handle" in h ? h.handle : h));
}

/**
 * Who listens, from the handler maps as registered: a `'*'` handler receives every change; a
 * `change.<kind>` handler every change of its kind, or, made with `onChange` and a `source`, those
 * of its sources only. Nothing else receives a change (the built-in sync handlers register none).
 */
export function changeListenersOf(maps: readonly object[]): ListensToChange {
  let everything = false;
  const sources = new Map<string, Set<ChangeSource>>();
  for (const map of maps)
    for (const [type, entry] of Object.entries(map)) {
      if (type === "*") everything = true;
      if (!isChangeEventType(type)) continue;
      const of = sources.get(type) ?? new Set<ChangeSource>();
      sources.set(type, of);
      for (const handler of entryHandlers(entry)) for (const source of changeSourcesOf(handler) ?? CHANGE_SOURCES) of.add(source);
    }
  if (everything) return EVERY_CHANGE;
  return (type, source) => sources.get(type)?.has(source) ?? false;
}

/**
 * A predicate to hand out before the handlers are known (the change feed is built before the
 * handler table): it asks whatever `bind` gave it last, every change until then.
 */
export function laterListeners(): { listens: ListensToChange; bind(to: ListensToChange): void } {
  let current = EVERY_CHANGE;
  return {
    listens: (type, source) => current(type, source),
    bind(to) {
      current = to;
    },
  };
}
