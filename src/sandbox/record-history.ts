/**
 * Every state of every changed record (from its state before the first change, or its creation),
 * oldest first. A record never changed has its current state as its history, so a seeded history
 * of a million records costs no copies.
 */
export function createRecordHistory() {
  const states = new Map<string, unknown[]>();
  const remember = (resource: { id: string }) => {
    const kept = states.get(resource.id) ?? [];
    kept.push(structuredClone(resource));
    states.set(resource.id, kept);
  };
  return {
    /** After a change (or a creation): a copy of the record as it is now. */
    remember,
    /** Before a change: the record's state until now, unless its history already starts earlier. */
    rememberBefore: (resource: { id: string }) => {
      if (!states.has(resource.id)) remember(resource);
    },
    /** A copy of the record's states, oldest first: `current` alone when it never changed, empty for no record. */
    of: (id: string, current: unknown): unknown[] => structuredClone(states.get(id) ?? (current ? [current] : [])),
    /** For a save: the newest `max` states of each record `keep` accepts. */
    newest: (keep: (id: string) => boolean, max: number): [string, unknown[]][] =>
      [...states].filter(([id]) => keep(id)).map(([id, kept]) => [id, kept.slice(-max)]),
    /** The states an earlier run saved. */
    load: (saved: [string, unknown[]][]) => {
      for (const [id, kept] of saved) states.set(id, kept);
    },
  };
}

export type RecordHistory = ReturnType<typeof createRecordHistory>;
