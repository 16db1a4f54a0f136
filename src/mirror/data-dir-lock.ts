import { closeSync, constants, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { lock } from "os-lock";

/** The embedded database's directory is in use by another live process. */
export class DataDirLockedError extends Error {
  readonly code = "data_dir_locked";
  constructor(
    readonly dataDir: string,
    /** The pid the holder wrote into the lock file (in its own PID namespace: another container's pid means nothing here). */
    readonly pid: number | undefined,
  ) {
    super(
      `the embedded database in ${dataDir} is already open in another process${pid === undefined ? "" : ` (pid ${pid} as it recorded)`}; it serves one process only. ` +
        `Run web and worker in one process (ROLE=all), or give every process DATABASE_URL=postgres://… (a PostgreSQL server).`,
    );
    this.name = "DataDirLockedError";
  }
}

export interface DataDirLock {
  release(): void;
}

const LOCK_FILE = "postgres.lock";

// Lock files this process holds. POSIX record locks belong to the process, so the kernel would
// let this process lock the file a second time — and closing that second descriptor would drop
// the first lock. Refusing here keeps "one PGlite per directory" within the process too.
const heldHere = new Set<string>();

function recordedPid(file: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(file, "utf8"), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes an exclusive OS lock (fcntl, through os-lock) on `<dataDir>/postgres.lock`, held by this
 * process's open descriptor. The kernel releases it when the process ends however it ends
 * (SIGKILL, OOM kill, a crashed container), so there is no staleness to judge: no pid is compared,
 * which is what went wrong across PID namespaces, and whatever a file holds (an old-format pid with
 * a newline, nothing) does not matter. The lock is on the file's inode, so it holds between
 * containers sharing the volume. The file is never deleted (a deleted file lets a newcomer lock a
 * fresh inode beside a live holder); our pid is written into it for the error message only.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, LOCK_FILE);
  if (heldHere.has(file)) throw new DataDirLockedError(dataDir, process.pid);
  // Claimed before the first await, so two opens in this process cannot both get past the check.
  heldHere.add(file);
  let fd: number | undefined;
  try {
    fd = openSync(file, constants.O_RDWR | constants.O_CREAT, 0o644);
    await lock(fd, { exclusive: true, immediate: true });
  } catch (error) {
    heldHere.delete(file);
    // Closing drops no lock of ours: this process holds none on the file (heldHere said so).
    if (fd !== undefined) closeSync(fd);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EAGAIN" || code === "EACCES") throw new DataDirLockedError(dataDir, recordedPid(file));
    throw error;
  }
  ftruncateSync(fd, 0);
  writeSync(fd, `${process.pid}\n`, 0);
  let released = false;
  const held = fd;
  return {
    release() {
      if (released) return;
      released = true;
      heldHere.delete(file);
      closeSync(held); // the kernel drops the lock with the descriptor
    },
  };
}
