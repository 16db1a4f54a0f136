import { parseArgs } from "node:util";
import { openStorage } from "../../mirror/storage.js";
import { loadConfig } from "../../config/config.js";

export const help = `svc-webhooks migrate

Applies every pending database migration (DATABASE_URL, else the embedded database under
DATA_DIR), under the migration lock, and prints the names it applied. The service also migrates
at start; run this before a deploy to see the change apart.`;

export async function run(argv: string[]): Promise<void> {
  parseArgs({ args: argv, options: {}, strict: true });
  const config = loadConfig({ ...process.env, ROLE: "worker" });
  const storage = await openStorage(config.database);
  try {
    const applied = await storage.migrate();
    console.log(JSON.stringify({ applied, schema: config.database.schema }));
  } finally {
    await storage.close();
  }
}
