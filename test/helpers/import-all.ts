import type { Kysely } from "kysely";
import type { MirrorStore } from "../../src/mirror/mirror-store.js";
import type { DatabaseSchema } from "../../src/mirror/database.js";
import { createSyncCheckpoints } from "../../src/mirror/sync-checkpoints.js";
import type { ApiClient } from "../../src/upstream/client.js";
import { runBackfill } from "../../src/sync/resumable-backfill.js";
import { SYNCED_KINDS } from "../../src/sync/resources.js";
import type { SyncedKind } from "../../src/mirror/kinds.js";

/**
 * Reads the whole lists of `kinds` into the mirror through the walker production runs (a backfill
 * without change events, checkpointed in `db`); the records read by kind, refused ones included.
 */
export async function importAll(deps: {
  api: ApiClient;
  mirror: MirrorStore;
  db: Kysely<DatabaseSchema>;
  kinds?: readonly SyncedKind[];
}): Promise<Record<SyncedKind, number>> {
  const outcome = await runBackfill({
    api: deps.api,
    mirror: deps.mirror,
    checkpoints: createSyncCheckpoints(deps.db),
    kinds: deps.kinds ?? SYNCED_KINDS,
  });
  return outcome.totals;
}
