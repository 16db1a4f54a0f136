import type { Logger } from "pino";
import { createEventLog, type EventLog, type HandlerAttempt, type LoggedEvent } from "./event-log.js";
import { createPostgresMirror, createSharedClock, databaseClock, type MirrorStore } from "./mirror-store.js";
import { createDatabase, type Database, migrateToLatest } from "./database.js";
import { DEFAULT_ACCOUNT } from "../config/defaults.js";
import { withOperatorTimeout } from "./errors.js";
import type { RejectedRecord } from "./set-aside-records.js";
import type { MirrorKind } from "./kinds.js";
import { readRecordStory, type RecordStory } from "./record-story.js";

import type { Config } from "../config/config.js";
import { createChangeOutbox, type ChangeOutbox } from "./change-outbox.js";
import { createStepStore, type StepRecord, type StepStore } from "./step-store.js";
import { createSyncCheckpoints, type SyncCheckpoints } from "./sync-checkpoints.js";

/** The service's system of record: the mirror and the event log, in one PostgreSQL database. */
export interface Storage {
  database: Database;
  /** The account (company) every store here reads and writes. */
  account: string;
  mirror: MirrorStore;
  /** The mirror for operator reads (GET /mirror): a server's operator pool, cancelled past OPERATOR_QUERY_TIMEOUT_MS. */
  operatorMirror: Pick<MirrorStore, "get" | "list">;
  eventLog: EventLog;
  /** Change events written with the mirror, waiting for the relay. */
  changeOutbox: ChangeOutbox;
  /** Durable steps' results (ctx.step). */
  steps: StepStore;
  /** Where the full reconciliation tier and backfill stand, per kind. */
  checkpoints: SyncCheckpoints;
  /** Applies pending migrations (under the migration lock); returns the names it applied. */
  migrate(): Promise<string[]>;
  /** Answers when the database does (a readiness check). */
  ping(): Promise<void>;
  /**
   * The same database's stores scoped to another account, built once per account and shared: no
   * connection of their own, so their `close()` leaves the database open (the storage it came from closes it).
   */
  forAccount(account: string): Storage;
  close(): Promise<void>;
}

/** Told of the records a mirror write set aside (set-aside-records.ts). */
type OnRejected = (rejected: readonly RejectedRecord[]) => void;

/**
 * Opens the database the config names (`DATABASE_URL`, else the embedded server on
 * `DATA_DIR`), or wraps one the caller opened (`database`: tests, library users); a wrapped
 * database is not closed by `close()`.
 */
export async function openStorage(
  config: Config["database"],
  options: {
    logger?: Logger;
    database?: Database;
    /** Told of the records a mirror write set aside (set-aside-records.ts). */
    onRejected?: OnRejected;
    /** Embedded: connect to the server of the service that holds DATA_DIR (one-off commands; DatabaseOptions.attach). */
    attach?: boolean;
    /**
     * The account (company) the stores are scoped to.
     * @defaultValue DEFAULT_ACCOUNT
     */
    account?: string;
  } = {},
): Promise<Storage> {
  const owned = options.database === undefined;
  const database = options.database ?? (await createDatabase({ ...config, logger: options.logger, attach: options.attach }));
  // One clock for every account's store: one sample of the database's time per process.
  const clock = createSharedClock({ read: () => databaseClock(database.db) });
  return scopedStorage(database, options.account ?? DEFAULT_ACCOUNT, { onRejected: options.onRejected, clock }, owned, new Map());
}

/**
 * The stores of one account over `database`; `owned`: `close()` closes the database. `scoped`
 * holds the stores of every account asked for over the same database, built once each.
 */
function scopedStorage(
  database: Database,
  account: string,
  shared: { onRejected: OnRejected | undefined; clock: () => Promise<Date> },
  owned: boolean,
  scoped: Map<string, Storage>,
): Storage {
  const self: Storage = {
    database,
    account,
    mirror: createPostgresMirror(database.db, { account, ...shared }),
    operatorMirror: operatorReads(createPostgresMirror(database.operatorDb, { account }), database.operatorQueryTimeoutMs),
    // Operator reads go through the operator pool, whose statements time out.
    eventLog: createEventLog(database.db, {
      account,
      reader: database.operatorDb,
      bounds: { timeoutMs: database.operatorQueryTimeoutMs },
    }),
    changeOutbox: createChangeOutbox(database.db, { account }),
    steps: createStepStore(database.db, { account }),
    checkpoints: createSyncCheckpoints(database.db, { account }),
    migrate: () => migrateToLatest(database),
    async ping() {
      await database.db.selectNoFrom((eb) => eb.val(1).as("one")).execute();
    },
    forAccount(other) {
      if (other === account) return self;
      let stores = scoped.get(other);
      if (!stores) scoped.set(other, (stores = scopedStorage(database, other, shared, false, scoped)));
      return stores;
    },
    async close() {
      if (owned) await database.close();
    },
  };
  return self;
}

/** A mirror's reads with a statement timeout turned into OperatorQueryTimeoutError (HTTP 503). */
function operatorReads(mirror: MirrorStore, timeoutMs: number): Pick<MirrorStore, "get" | "list"> {
  return {
    get: (kind, id) => withOperatorTimeout(timeoutMs, () => mirror.get(kind, id)),
    list: (kind, filter) => withOperatorTimeout(timeoutMs, () => mirror.list(kind, filter)),
  };
}

/** One event whole: the log's record, every kept attempt of each handler, and its durable steps. */
export interface EventDetail extends LoggedEvent {
  /** One row per attempt of each handler (the latest KEPT_ATTEMPTS_PER_HANDLER each), by handler key, then attempt. */
  handlerAttempts: HandlerAttempt[];
  steps: StepRecord[];
}

/** An event as GET /events/{id} and the console's event page show it; undefined when the log holds no such event. */
export async function readEventDetail(storage: Pick<Storage, "eventLog" | "steps">, id: string): Promise<EventDetail | undefined> {
  const event = await storage.eventLog.get(id);
  if (!event) return undefined;
  return { ...event, handlerAttempts: await storage.eventLog.handlerAttempts(id), steps: await storage.steps.forEvent(id) };
}

/** A record's story as GET /records/{kind}/{id} and the console's record page tell it: an operator read, bounded in time. */
export function readStory(
  storage: Pick<Storage, "database" | "account">,
  kind: MirrorKind,
  id: string,
  cursor?: string,
): Promise<RecordStory | undefined> {
  const { operatorDb, operatorQueryTimeoutMs: timeoutMs } = storage.database;
  return readRecordStory(operatorDb, kind, id, { cursor, timeoutMs, account: storage.account });
}
