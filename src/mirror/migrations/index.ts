import type { Migration, MigrationProvider } from "kysely";
import * as m0001 from "./0001_mirror.js";
import * as m0002 from "./0002_event_log.js";
import * as m0003 from "./0003_change_outbox.js";
import * as m0004 from "./0004_rejected_records.js";
import * as m0005 from "./0005_event_log_indexes.js";
import * as m0006 from "./0006_steps.js";
import * as m0007 from "./0007_sync_checkpoints.js";
import * as m0008 from "./0008_outbox_trace.js";
import * as m0009 from "./0009_unlisted_records.js";
import * as m0010 from "./0010_sync_liveness.js";
import * as m0011 from "./0011_handler_key_renames.js";
import * as m0013 from "./0013_event_records.js";
import * as m0014 from "./0014_handler_attempts.js";
import * as m0015 from "./0015_replay_runs.js";

/**
 * Every migration, by name, imported statically so the same list runs from `src/` under tsx and
 * from `dist/` (a folder scan would depend on file extensions and the working directory).
 * Append new migrations; never edit or rename a released one.
 */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  "0001_mirror": m0001,
  "0002_event_log": m0002,
  "0003_change_outbox": m0003,
  "0004_rejected_records": m0004,
  "0005_event_log_indexes": m0005,
  "0006_steps": m0006,
  "0007_sync_checkpoints": m0007,
  "0008_outbox_trace": m0008,
  "0009_unlisted_records": m0009,
  "0010_sync_liveness": m0010,
  "0011_handler_key_renames": m0011,
  "0013_event_records": m0013,
  "0014_handler_attempts": m0014,
  "0015_replay_runs": m0015,
};

/** A provider of the first `count` migrations (all by default); tests use it to stop at an older version. */
export function staticMigrationProvider(count = Object.keys(MIGRATIONS).length): MigrationProvider {
  const selected = Object.fromEntries(Object.entries(MIGRATIONS).slice(0, count));
  return { getMigrations: () => Promise.resolve(selected) };
}
