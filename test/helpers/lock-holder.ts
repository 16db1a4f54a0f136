/**
 * A second process for data-dir lock tests: takes the lock on the directory in argv[2], prints
 * `locked <pid>` (or `refused <message>`), and holds it until killed or its stdin closes.
 */
import { lockDataDir } from "../../src/mirror/database.js";
const dir = process.argv[2];
if (!dir) throw new Error("usage: lock-holder <dataDir>");
try {
  const lock = await lockDataDir(dir);
  process.stdout.write(`locked ${process.pid}\n`);
  process.stdin.resume();
  process.stdin.on("end", () => {
    lock.release();
    process.exit(0);
  });
} catch (error) {
  process.stdout.write(`refused ${(error as Error).message}\n`);
  process.exit(3);
}
