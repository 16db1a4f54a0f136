/** A throwaway PostgreSQL server from the installed binaries (else the embedded store's), for the test run only. */
import { execFile } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "../../src/redis/local-server.js";
import { embeddedBinaries } from "../../src/mirror/embedded-binaries.js";
import type { ServerUser } from "../../src/mirror/embedded-user.js";

const run = promisify(execFile);

export interface PostgresServer {
  url: string;
  /** The server's data directory (its postmaster.pid names the server process). */
  dataDir: string;
  /** Stops the server (fast mode: connections are cut, data kept) and resolves once it is down. */
  stop(): Promise<void>;
  /** Starts the stopped server again on the same port, resolving once it accepts connections. */
  start(): Promise<void>;
  /** Stops the server (immediate mode: nothing here needs to survive) and removes its directory. */
  destroy(): Promise<void>;
}

/**
 * The directory holding initdb and pg_ctl: on PATH, else the newest /usr/lib/postgresql/<major>/bin,
 * else the embedded store's (TEST_EMBEDDED_ONLY=1 takes those first: the quickstart's machine).
 */
export async function findPostgresBin(): Promise<string> {
  // As root, the ones the server's user reaches: the package's own, else a root-only copy.
  const embedded = async () => (await embeddedBinaries(await testServerUser())).bin;
  if (process.env.TEST_EMBEDDED_ONLY === "1") return embedded();
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir && existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"))) return dir;
  }
  const root = "/usr/lib/postgresql";
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const installed = majors
    .map((v) => join(root, v, "bin"))
    .find((dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")));
  return installed ?? embedded();
}

/**
 * initdb refuses to run as root: as root, the binaries run as `nobody`. Not as the embedded
 * server's own user (embedded-user.ts): this server trusts every loopback connection (and a
 * superuser session can run programs as its user), so its user must own nothing else, least of all
 * real clusters; nor as the machine's own `postgres`, which owns the system's PostgreSQL.
 */
async function testServerUser(): Promise<ServerUser | undefined> {
  if (process.getuid?.() !== 0) return undefined; // not root: the files are ours already
  const id = async (flag: string) => Number((await run("id", [flag, "nobody"])).stdout.trim());
  const [uid, gid] = await Promise.all([id("-u"), id("-g")]);
  return { uid, gid, name: "nobody" };
}

/** How the binaries run: as testServerUser, in a directory it owns, with an environment of C messages only. */
async function asServerUser(): Promise<{ options: { uid?: number; gid?: number; env?: NodeJS.ProcessEnv }; own: (path: string) => void }> {
  const user = await testServerUser();
  if (!user) return { options: {}, own: () => undefined };
  return {
    options: { uid: user.uid, gid: user.gid, env: { LC_ALL: "C" } },
    own: (path) => chownSync(path, user.uid, user.gid),
  };
}

/**
 * initdb into a fresh temp directory, then pg_ctl start on a free loopback port with durability
 * off (fsync, synchronous_commit: a test server loses nothing it needs on a crash), unless
 * `durable` (the bench: commits cost what they cost in production). Trust auth, loopback only,
 * its socket inside its own directory.
 */
export async function startPostgresServer(bin: string, options: { durable?: boolean } = {}): Promise<PostgresServer> {
  const user = await asServerUser();
  const dir = mkdtempSync(join(tmpdir(), "svc-webhooks-pg-"));
  user.own(dir);
  const data = join(dir, "data");
  const exec = (tool: string, args: string[]) => run(join(bin, tool), args, { cwd: dir, ...user.options });
  try {
    await exec("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"]);
    // The free port can be taken between the probe and the start: try a few.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const durability = options.durable ? "" : " -c fsync=off -c synchronous_commit=off -c full_page_writes=off";
      const settings = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir}${durability} -c max_connections=200`;
      try {
        await exec("pg_ctl", ["-D", data, "-l", join(dir, "server.log"), "-w", "-t", "60", "-o", settings, "start"]);
      } catch (error) {
        if (attempt < 3) continue;
        throw error;
      }
      return {
        url: `postgres://postgres@127.0.0.1:${port}/postgres`,
        dataDir: data,
        async stop() {
          await exec("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]);
        },
        async start() {
          await exec("pg_ctl", ["-D", data, "-l", join(dir, "server.log"), "-w", "-t", "60", "-o", settings, "start"]);
        },
        async destroy() {
          await exec("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => undefined);
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
