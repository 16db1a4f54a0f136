import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { createChangeOutbox, type ChangeOutbox } from "./change-outbox.js";
import { createDatabase, type Database } from "./database.js";
import { createEventLog, type EventLog } from "./event-log.js";
import { migrateToLatest } from "./migrate.js";
import { createPostgresMirror } from "./postgres-store.js";
import type { MirrorStore, RejectedRecord } from "./store.js";

/** The service's system of record: the mirror and the event log, in one PostgreSQL database. */
export interface Storage {
  database: Database;
  mirror: MirrorStore;
  eventLog: EventLog;
  /** Change events written with the mirror, waiting for the relay. */
  changeOutbox: ChangeOutbox;
  /** Applies pending migrations (under the migration lock); returns the names it applied. */
  migrate(): Promise<string[]>;
  /** Answers when the database does (a readiness check). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens the database the config names (`DATABASE_URL`, else the embedded PGlite under
 * `DATA_DIR`), or wraps one the caller opened (`database`: tests, library users); a wrapped
 * database is not closed by `close()`.
 */
export async function openStorage(
  config: Config["database"],
  options: {
    logger?: Logger;
    database?: Database;
    /** Told of the records a mirror write set aside (rejection-reporter.ts). */
    onRejected?: (rejected: readonly RejectedRecord[]) => void;
  } = {},
): Promise<Storage> {
  const owned = options.database === undefined;
  const database =
    options.database ??
    (await createDatabase({
      url: config.url,
      dataDir: config.dataDir,
      schema: config.schema,
      logger: options.logger,
    }));
  return {
    database,
    mirror: createPostgresMirror(database.db, { onRejected: options.onRejected }),
    eventLog: createEventLog(database.db),
    changeOutbox: createChangeOutbox(database.db),
    migrate: () => migrateToLatest(database),
    async ping() {
      await database.db.selectNoFrom((eb) => eb.val(1).as("one")).execute();
    },
    async close() {
      if (owned) await database.close();
    },
  };
}
