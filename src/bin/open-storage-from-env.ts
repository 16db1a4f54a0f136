import type { Config } from "../config/config.js";
import { openStorage, type Storage } from "../mirror/storage.js";

/** The database a one-off command works on, migrated first (commands may run before any server did). */
export async function openMigratedStorage(config: Config): Promise<Storage> {
  const storage = await openStorage(config.database);
  try {
    await storage.migrate();
    return storage;
  } catch (err) {
    await storage.close();
    throw err;
  }
}
