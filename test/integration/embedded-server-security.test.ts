// The embedded server's security as a real process sees it: the user it runs as, the folders it
// reaches without changing them, the programs it agrees to run, its environment and its socket's
// authentication. The root cases run as root (CI does) and are skipped, saying so, otherwise.
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  lchownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { sql } from "kysely";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createDatabase, migrateToLatest } from "../../src/mirror/database.js";
import { alive, EMBEDDED_PASSWORD_FILE, embeddedDirectory, startEmbeddedServer } from "../../src/mirror/embedded-server.js";
import { embeddedBinaries, embeddedPackage } from "../../src/mirror/embedded-binaries.js";
import { SERVER_USER_NAME, type ServerUser } from "../../src/mirror/embedded-user.js";
import { EmbeddedServerError } from "../../src/mirror/errors.js";
import { signPayload } from "../../src/events/envelope.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { sampleEvent, TEST_SECRET } from "../helpers/edge.js";
import { waitFor } from "../helpers/wait-for.js";

const isRoot = process.getuid?.() === 0;
const ROOT_ONLY = "as root (CI runs as root; skipped here: this run is not root)";

const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

/** The postmaster's pid, from its own record in the cluster. */
const serverPid = (dataDir: string) => Number(readFileSync(join(embeddedDirectory(dataDir), "postmaster.pid"), "utf8").split("\n")[0]);
/** A process's environment as any process of its user reads it. */
const environment = (pid: number) => readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter(Boolean);
/** A process's real uid, from /proc. */
const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
const mode = (path: string) => statSync(path).mode & 0o7777;
const userId = (name: string) => Number(execFileSync("id", ["-u", name], { encoding: "utf8" }).trim());

/** Connects to an embedded server's socket as its superuser with `password`; resolves with the error code, or "ok". */
async function tryConnect(dataDir: string, password: string | undefined): Promise<string> {
  const client = new pg.Client({ host: embeddedDirectory(dataDir), port: 5432, user: "postgres", database: "postgres", password });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("select 1");
    return "ok";
  } catch (error) {
    return (error as { code?: string }).code ?? (error as Error).message;
  } finally {
    await client.end().catch(() => undefined);
  }
}

describe("the embedded server's environment and socket", () => {
  it("gets LC_ALL and nothing else of the service's environment, and its socket asks the password kept in DATA_DIR (0600)", async () => {
    const dataDir = tempDir("svc-embedded-env-");
    const marker = `SVC_TEST_SECRET_${randomBytes(4).toString("hex")}`;
    process.env[marker] = "not-for-the-database";
    cleanups.push(() => Reflect.deleteProperty(process.env, marker));
    const database = await createDatabase({ dataDir, schema: "svc" });
    try {
      await migrateToLatest(database);
      const pid = serverPid(dataDir);
      expect(environment(pid)).toEqual(["LC_ALL=C"]);
      const file = join(dataDir, EMBEDDED_PASSWORD_FILE);
      expect(mode(file)).toBe(0o600);
      expect(statSync(file).uid).toBe(process.getuid?.());
      const password = readFileSync(file, "utf8").trim();
      expect(password).toMatch(/^[0-9a-f]{48}$/);
      expect(await tryConnect(dataDir, "wrong-password")).toBe("28P01");
      expect(await tryConnect(dataDir, password)).toBe("ok");
      expect(readFileSync(join(embeddedDirectory(dataDir), "pg_hba.conf"), "utf8")).not.toMatch(/^[^#].*\btrust\b/m);
    } finally {
      await database.close();
    }
  }, 120_000);

  it("secures a cluster an earlier version made (initdb -A trust, no password, as nobody when root): its data is kept, trust is gone", async () => {
    const dataDir = tempDir("svc-embedded-legacy-");
    const cluster = embeddedDirectory(dataDir);
    // The earlier version: DATA_DIR given o+x, the cluster initdb'd with trust by the server's user.
    const legacy: ServerUser | undefined = isRoot ? { uid: 65534, gid: 65534, name: "nobody" } : undefined;
    chmodSync(dataDir, 0o711);
    mkdirSync(cluster, { mode: 0o700 });
    if (legacy) chownSync(cluster, legacy.uid, legacy.gid);
    const { bin } = await embeddedBinaries(legacy);
    const asLegacy = { ...(legacy ? { uid: legacy.uid, gid: legacy.gid } : {}), env: { LC_ALL: "C" }, encoding: "utf8" as const };
    const initdb = spawnSync(
      join(bin, "initdb"),
      ["-D", cluster, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"],
      asLegacy,
    );
    expect(initdb.status, initdb.stderr).toBe(0);
    const single = spawnSync(join(bin, "postgres"), ["--single", "-D", cluster, "-c", "exit_on_error=on", "postgres"], {
      ...asLegacy,
      input: "create table legacy (note text); insert into legacy values ('kept');\n",
    });
    expect(single.status, single.stderr).toBe(0);
    expect(readFileSync(join(cluster, "pg_hba.conf"), "utf8")).toMatch(/^local\s+all\s+all\s+trust/m);

    const database = await createDatabase({ dataDir, schema: "svc" });
    try {
      const { rows } = await sql<{ note: string }>`select note from public.legacy`.execute(database.db);
      expect(rows).toEqual([{ note: "kept" }]);
      const hba = readFileSync(join(cluster, "pg_hba.conf"), "utf8");
      expect(hba).not.toMatch(/^[^#].*\btrust\b/m);
      expect(hba).toMatch(/^local\s+all\s+all\s+scram-sha-256$/m);
      expect(await tryConnect(dataDir, "")).not.toBe("ok");
      if (isRoot) {
        const own = userId(SERVER_USER_NAME);
        expect(statSync(cluster).uid).toBe(own);
        expect(statSync(join(cluster, "PG_VERSION")).uid).toBe(own);
        expect(uidOf(serverPid(dataDir))).toBe(own);
      }
    } finally {
      await database.close();
    }
  }, 120_000);
});

describe.runIf(isRoot)(ROOT_ONLY, () => {
  it(
    "`serve` with DATA_DIR under 0700 folders handles a delivery without changing a folder's mode; its server runs as " +
      `${SERVER_USER_NAME}, holds no secret, and an orphan left by kill -9 holds none either and is stopped by the next start`,
    async () => {
      // root's home as Debian makes it: private all the way down to DATA_DIR.
      const home = tempDir("svc-root-home-");
      const app = join(home, "app");
      const dataDir = join(app, ".data");
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      const folders = [home, app, dataDir];
      const modes = folders.map(mode);
      expect(modes).toEqual([0o700, 0o700, 0o700]);
      const secrets = {
        SIGNING_SECRET: TEST_SECRET,
        ADMIN_TOKEN: `admin-${randomBytes(12).toString("hex")}`,
        SECRETS_KEY: randomBytes(32).toString("hex"),
        API_KEY: `svc_live_${randomBytes(12).toString("hex")}`,
      };
      const env = {
        ...secrets,
        DATA_DIR: dataDir,
        REDIS_URL: inject("redisUrl"),
        QUEUE_PREFIX: `test-${randomBytes(4).toString("hex")}`,
        HOST: "127.0.0.1",
        PORT: "0",
        // The key names nothing reachable: no sync reads leave the machine.
        API_BASE_URL: "http://127.0.0.1:9",
        RECONCILE_INTERVAL_SECONDS: "0",
      };
      const procs: CliProcess[] = [];
      cleanups.push(() => {
        for (const proc of procs) if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill("SIGKILL");
        // An orphan this test left, if an assertion stopped it early.
        if (existsSync(join(embeddedDirectory(dataDir), "postmaster.pid")) && alive(serverPid(dataDir)))
          process.kill(serverPid(dataDir), "SIGQUIT");
      });

      const first = runCli(["serve"], env);
      procs.push(first);
      const url = await first.listening();
      const event = sampleEvent({ type: "guest.visited", data: {} });
      const body = JSON.stringify(event);
      const sent = await fetch(`${url}/webhooks`, {
        method: "POST",
        body,
        headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, TEST_SECRET) },
      });
      expect(sent.status).toBe(200);
      const status = async (base: string) => {
        const res = await fetch(`${base}/events/${event.id}`, { headers: { authorization: `Bearer ${secrets.ADMIN_TOKEN}` } });
        return res.ok ? ((await res.json()) as { status: string }).status : undefined;
      };
      await waitFor(async () => (await status(url)) === "handled", { what: "the delivery handled", timeoutMs: 60_000 });

      expect(folders.map(mode)).toEqual(modes);
      const pid = serverPid(dataDir);
      expect(uidOf(pid)).toBe(userId(SERVER_USER_NAME));
      const seen = environment(pid);
      expect(seen).toEqual(["LC_ALL=C"]);
      for (const value of Object.values(secrets)) expect(seen.join("\n")).not.toContain(value);
      expect(await tryConnect(dataDir, undefined)).not.toBe("ok");
      expect(await tryConnect(dataDir, "wrong-password")).toBe("28P01");

      first.child.kill("SIGKILL");
      await first.exited;
      expect(alive(pid)).toBe(true); // the orphan: nothing stopped it
      expect(environment(pid)).toEqual(["LC_ALL=C"]);

      const second = runCli(["serve"], env);
      procs.push(second);
      const again = await second.listening();
      expect(alive(pid)).toBe(false);
      expect(await status(again)).toBe("handled");
      expect(folders.map(mode)).toEqual(modes);
      second.child.kill("SIGTERM");
      expect((await second.exited).code).toBe(0);
    },
    240_000,
  );

  describe("a folder planted where the binaries' copy goes is refused in one line naming it, and never run", () => {
    const { root: realPackage, version } = embeddedPackage();
    /** The package behind a 0700 folder, as node_modules in root's home is: the server's user cannot reach it. */
    const privatePackage = () => {
      const dir = tempDir("svc-private-modules-");
      symlinkSync(realPackage, join(dir, "package"));
      return join(dir, "package");
    };
    /** A folder the server's user may pass, for the copy (root's, 0755, under sticky /tmp). */
    const copyRoot = () => {
      const dir = tempDir("svc-copy-root-");
      chmodSync(dir, 0o755);
      return dir;
    };
    const OTHER = 4242;
    /** A would-be copy whose programs, if ever run, leave a mark in a folder every user may write. */
    const plantPrograms = (copy: string) => {
      const marks = tempDir("svc-marks-");
      chmodSync(marks, 0o777);
      mkdirSync(join(copy, "bin"), { recursive: true });
      for (const program of ["initdb", "postgres"]) {
        writeFileSync(join(copy, "bin", program), `#!/bin/sh\necho ${program} >> ${marks}/ran\nexit 1\n`, { mode: 0o755 });
      }
      return join(marks, "ran");
    };
    const plants: [string, (root: string, copy: string) => string][] = [
      [
        "a folder another uid owns",
        (_root, copy) => {
          const ran = plantPrograms(copy);
          execFileSync("chown", ["-R", `${OTHER}:${OTHER}`, copy]);
          return ran;
        },
      ],
      [
        "a root folder others may write",
        (_root, copy) => {
          const ran = plantPrograms(copy);
          chmodSync(copy, 0o777);
          return ran;
        },
      ],
      [
        "a root folder holding a program another uid owns",
        (_root, copy) => {
          const ran = plantPrograms(copy);
          chownSync(join(copy, "bin", "postgres"), OTHER, OTHER);
          return ran;
        },
      ],
      [
        "a root folder holding a program its group may write",
        (_root, copy) => {
          const ran = plantPrograms(copy);
          chmodSync(join(copy, "bin", "postgres"), 0o775);
          return ran;
        },
      ],
      [
        "a symbolic link to a folder another uid owns",
        (root, copy) => {
          const elsewhere = join(root, "elsewhere");
          const ran = plantPrograms(elsewhere);
          execFileSync("chown", ["-R", `${OTHER}:${OTHER}`, elsewhere]);
          symlinkSync(elsewhere, copy);
          return ran;
        },
      ],
      [
        "a symbolic link another uid owns",
        (root, copy) => {
          const elsewhere = join(root, "elsewhere");
          const ran = plantPrograms(elsewhere);
          symlinkSync(elsewhere, copy);
          lchownSync(copy, OTHER, OTHER);
          return ran;
        },
      ],
      [
        "a folder above it that another uid owns",
        (root, copy) => {
          const ran = plantPrograms(copy);
          chownSync(root, OTHER, OTHER);
          return ran;
        },
      ],
      [
        "a folder above it that its group may write",
        (root, copy) => {
          const ran = plantPrograms(copy);
          chmodSync(root, 0o775);
          return ran;
        },
      ],
    ];

    it.each(plants)("%s", async (_what, plant) => {
      const root = copyRoot();
      const copy = join(root, `postgres-${version}`);
      const ran = plant(root, copy);
      const dataDir = tempDir("svc-planted-data-");
      const error = await startEmbeddedServer(dataDir, { binaries: { packageRoot: privatePackage(), copyRoot: root } }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(EmbeddedServerError);
      const message = (error as Error).message;
      expect(message.split("\n")).toHaveLength(1);
      expect(message).toMatch(/only from a place only root can change/);
      expect(message).toContain(root);
      expect(existsSync(ran)).toBe(false);
      expect(existsSync(join(copy, "bin", "postgres"))).toBe(true); // refused, not removed
    });

    it("with none planted, the package is copied once into a folder only root writes, and the server runs from that copy", async () => {
      const root = copyRoot();
      const packageRoot = privatePackage();
      const copy = join(root, `postgres-${version}`);
      const dataDir = tempDir("svc-copied-data-");
      const server = await startEmbeddedServer(dataDir, { binaries: { packageRoot, copyRoot: root } });
      try {
        expect(readlinkSync(`/proc/${serverPid(dataDir)}/exe`)).toBe(join(copy, "bin", "postgres"));
        const stats = statSync(copy);
        expect([stats.uid, stats.mode & 0o7777]).toEqual([0, 0o755]);
        const files = execFileSync("find", [copy, "(", "!", "-user", "root", "-o", "-perm", "/022", "!", "-type", "l", ")"], {
          encoding: "utf8",
        });
        expect(files).toBe("");
      } finally {
        await server.stop();
      }
      const inode = statSync(copy).ino;
      await (await startEmbeddedServer(dataDir, { binaries: { packageRoot, copyRoot: root } })).stop();
      expect(statSync(copy).ino).toBe(inode);
    }, 120_000);
  });
});
