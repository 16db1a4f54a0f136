/**
 * A second process for data-dir lock tests: takes the lock on the directory in argv[2], prints
 * `locked <pid>` (or `refused <message>`), and holds it until killed or its stdin closes. With
 * `--database <template>` it opens the embedded database there instead (from that initdb'd
 * cluster), migrates it, writes review `rev_held`, and prints `opened <pid> <server pid>`.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createDatabase, migrateToLatest } from "../../src/mirror/database.js";
import { DEFAULT_ACCOUNT } from "../../src/config/defaults.js";
import { embeddedDirectory, lockDataDir } from "../../src/mirror/embedded-server.js";
const [dir, flag, template] = process.argv.slice(2);
if (!dir) throw new Error("usage: lock-holder <dataDir> [--database <template>]");
try {
  if (flag === "--database") {
    const database = await createDatabase({ dataDir: dir, embeddedTemplate: template });
    await migrateToLatest(database);
    await database.db
      .insertInto("reviews")
      .values({ account_id: DEFAULT_ACCOUNT, id: "rev_held", restaurant_id: "r1", raw: "{}", read_at: new Date() })
      .execute();
    const serverPid = readFileSync(join(embeddedDirectory(dir), "postmaster.pid"), "utf8").split("\n")[0];
    process.stdout.write(`opened ${process.pid} ${serverPid}\n`);
  } else {
    const lock = await lockDataDir(dir);
    process.stdout.write(`locked ${process.pid}\n`);
    process.stdin.on("end", () => {
      lock.release();
      process.exit(0);
    });
  }
  process.stdin.resume();
} catch (error) {
  process.stdout.write(`refused ${(error as Error).message}\n`);
  process.exit(3);
}
