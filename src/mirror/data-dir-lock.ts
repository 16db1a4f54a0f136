import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The embedded database's directory is in use by another live process. */
export class DataDirLockedError extends Error {
  readonly code = "data_dir_locked";
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `the embedded database in ${dataDir} is already open in process ${pid}; it serves one process only. ` +
        `Run web and worker in one process (ROLE=all), or give every process DATABASE_URL=postgres://… (a PostgreSQL server).`,
    );
    this.name = "DataDirLockedError";
  }
}

export interface DataDirLock {
  release(): void;
}

const LOCK_FILE = "postgres.lock";

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
 * Takes `<dataDir>/postgres.lock` exclusively (created with O_EXCL, our pid inside). A lock left
 * by a process that no longer runs is stale and taken over; one held by a live process —
 * this one included, since PGlite cannot share a directory between two instances — fails.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: "wx" });
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          rmSync(file, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    let holder = Number.NaN;
    try {
      holder = Number.parseInt(readFileSync(file, "utf8"), 10);
    } catch {
      continue; // removed between our attempt and the read: try again
    }
    if (Number.isInteger(holder) && holder > 0 && isAlive(holder)) throw new DataDirLockedError(dataDir, holder);
    // Stale (dead pid, or a torn write): remove it, but only if it still names the dead holder, so
    // a process that took the lock since we read it keeps it (a window of one read remains).
    try {
      if (readFileSync(file, "utf8") === String(Number.isNaN(holder) ? "" : holder) || Number.isNaN(holder)) rmSync(file, { force: true });
    } catch {
      // gone already
    }
  }
  throw new Error(`could not take the lock file ${file}: it keeps reappearing with no live owner`);
}
