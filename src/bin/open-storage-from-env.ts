import { openStorage, type Storage } from "../mirror/storage.js";
import type { RejectedRecord } from "../mirror/set-aside-records.js";
import type { Config } from "../config/config.js";

/** The database a one-off command works on, migrated first (commands may run before any server did). */
export async function openMigratedStorage(
  config: Config,
  options: { onRejected?: (rejected: readonly RejectedRecord[]) => void } = {},
): Promise<Storage> {
  const storage = await openStorage(config.database, options);
  try {
    await storage.migrate();
    return storage;
  } catch (err) {
    await storage.close();
    throw err;
  }
}
