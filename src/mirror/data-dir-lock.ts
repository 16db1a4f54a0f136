import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The embedded database's directory is in use by another live process. */
export class DataDirLockedError extends Error {
  readonly code = "data_dir_locked";
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `the embedded database in ${dataDir} is already open in process ${pid} (lock file ${join(dataDir, LOCK_FILE)}); it serves one process only. ` +
        `Run web and worker in one process (ROLE=all), or give every process DATABASE_URL=postgres://… (a PostgreSQL server).`,
    );
    this.name = "DataDirLockedError";
  }
}

export interface DataDirLock {
  release(): void;
}

const LOCK_FILE = "postgres.lock";

// Lock files this process holds. Process-wide on purpose: it is what tells "this process opened
// the directory twice" apart from "a previous run that had our pid (a restarted container's pid 1)
// left its file behind".
const heldHere = new Set<string>();

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else — still alive.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Takes `<dataDir>/postgres.lock` exclusively: our pid is written to a private file first, then
 * hard-linked to the lock name (link fails if the name exists), so the lock never exists without
 * its complete pid in it. A lock left by a process that no longer runs is stale and taken over;
 * one held by a live process — this one included, since PGlite cannot share a directory between
 * two instances — fails. (A stale pid reused by an unrelated live process reads as held: remove
 * the file by hand then; the error names it.)
 */
export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    const mine = `${file}.${process.pid}`;
    writeFileSync(mine, String(process.pid));
    try {
      linkSync(mine, file);
      rmSync(mine, { force: true });
      heldHere.add(file);
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          heldHere.delete(file);
          rmSync(file, { force: true });
        },
      };
    } catch (error) {
      rmSync(mine, { force: true });
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    let holder: number;
    try {
      holder = Number.parseInt(readFileSync(file, "utf8"), 10);
    } catch {
      continue; // removed between our attempt and the read: try again
    }
    const ours = holder === process.pid;
    if (Number.isInteger(holder) && holder > 0 && (ours ? heldHere.has(file) : isAlive(holder)))
      throw new DataDirLockedError(dataDir, holder);
    // Stale (dead pid, our pid from an earlier run, or not a pid at all): remove it, but only if it still holds what we read,
    // so a process that took the lock since keeps it (a window of one read remains).
    try {
      const now = readFileSync(file, "utf8");
      if (Number.isNaN(holder) ? !/^\d+$/.test(now) : now === String(holder)) rmSync(file, { force: true });
    } catch {
      // gone already
    }
  }
  throw new Error(`could not take the lock file ${file}: it keeps reappearing with no live owner`);
}
