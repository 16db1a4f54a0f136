import { sql, type Kysely } from "kysely";
import type { DatabaseSchema } from "./database-schema.js";

/** A stored handler key and the key the same handler has now. */
export interface HandlerKeyRename {
  from: string;
  to: string;
}

/** A rename this call made (one made before is skipped), with how many step records it moved. */
export interface AppliedHandlerKeyRename extends HandlerKeyRename {
  steps: number;
}

/**
 * Moves the step records stored under each `from` key to its `to` key, each rename once ever
 * (recorded in `handler_key_renames`, migration 0011), in one transaction and one pass over
 * `steps`: a worker starting beside this one waits for it, then finds the renames done. A step
 * the handler already has under its new key (it ran since) is kept; the old row is left to
 * retention. The event log keeps earlier outcomes under the keys they ran under.
 */
export async function renameHandlerKeys(
  db: Kysely<DatabaseSchema>,
  renames: readonly HandlerKeyRename[],
): Promise<AppliedHandlerKeyRename[]> {
  if (renames.length === 0) return [];
  return db.transaction().execute(async (tx) => {
    const { rows: claimed } = await sql<{ from_key: string; to_key: string }>`
      insert into handler_key_renames (from_key, to_key)
      select * from unnest(${renames.map((r) => r.from)}::text[], ${renames.map((r) => r.to)}::text[])
      on conflict (from_key) do nothing
      returning from_key, to_key`.execute(tx);
    if (claimed.length === 0) return [];
    const { rows: moved } = await sql<{ from_key: string; steps: number }>`
      with moved as (
        update steps s set handler_key = r.to_key
        from handler_key_renames r
        where r.from_key = any(${claimed.map((c) => c.from_key)}::text[]) and s.handler_key = r.from_key
          and not exists (select 1 from steps n where n.event_id = s.event_id and n.handler_key = r.to_key and n.name = s.name)
        returning r.from_key
      )
      select from_key, count(*)::int as steps from moved group by from_key`.execute(tx);
    const counts = new Map(moved.map((m) => [m.from_key, m.steps]));
    await sql`
      update handler_key_renames r set steps = c.steps
      from unnest(${[...counts.keys()]}::text[], ${[...counts.values()]}::int[]) as c(from_key, steps)
      where r.from_key = c.from_key`.execute(tx);
    return claimed.map((c) => ({ from: c.from_key, to: c.to_key, steps: counts.get(c.from_key) ?? 0 }));
  });
}
