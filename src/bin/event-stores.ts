import { existsSync } from "node:fs";
import { embeddedDirectory, DataDirLockedError } from "../mirror/database.js";
import type { Storage } from "../mirror/storage.js";
import type { Config } from "../config/config.js";
import { CommandError } from "./command-error.js";
import { openMigratedStorage } from "./open-storage-from-env.js";

/** The embedded database is open in a running service: only it may use it (askService hands the work over). */
export const HELD_BY_SERVICE = "held-by-service";

/**
 * The event log of the deployment the config names, opened here: DATABASE_URL, else the embedded
 * database under DATA_DIR. An embedded one must exist already (a replay of a log that was never
 * written would create a database only to find nothing in it); one that a running service holds
 * answers HELD_BY_SERVICE.
 */
export async function openEventStores(config: Config): Promise<Storage | typeof HELD_BY_SERVICE> {
  const { url, dataDir } = config.database;
  if (!url && !dataDir.startsWith("memory://") && !existsSync(embeddedDirectory(dataDir)))
    throw new CommandError(
      `no embedded database in DATA_DIR ${dataDir} (nothing was created): set DATA_DIR to the service's, or DATABASE_URL to its PostgreSQL`,
    );
  try {
    return await openMigratedStorage(config);
  } catch (err) {
    if (err instanceof DataDirLockedError) return HELD_BY_SERVICE;
    throw err;
  }
}
