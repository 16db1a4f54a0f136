import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { DataDirLockedError, lockDataDir } from "../../src/mirror/embedded-server.js";
import { TEST_SECRET } from "../helpers/edge.js";
import { runCli } from "../helpers/cli-process.js";

// Issue 21 item 10: the lock is the kernel's (fcntl), held by a live process's descriptor; the
// pid in the file is for messages only, so PID namespaces and leftover contents change nothing.
const dirs: string[] = [];
const children: ChildProcess[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-lock-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Another process that takes the lock and holds it; resolves with its first line (`locked <pid>` or `refused …`). */
async function holder(dataDir: string): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/lock-holder.ts", dataDir], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  children.push(child);
  let out = "";
  child.stdout.setEncoding("utf8");
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (d: string) => {
      out += d;
      if (out.includes("\n")) resolve(out.slice(0, out.indexOf("\n")));
    });
    child.once("exit", (code) => reject(new Error(`lock holder exited ${code} before a line: ${out}`)));
  });
  return { child, line };
}

/** The lock, taken in this process (through a promise either way, so a refusal is a rejection). */
const take = (dataDir: string) => Promise.resolve().then(() => lockDataDir(dataDir));

const killed = async (child: ChildProcess) => {
  const exit = once(child, "exit");
  child.kill("SIGKILL");
  await exit;
};

describe("embedded data-directory lock", () => {
  it("refuses a second process while the first lives, and lets the next one in once the first is SIGKILLed", async () => {
    const dataDir = tempDir();
    const first = await holder(dataDir);
    expect(first.line).toBe(`locked ${first.child.pid}`);
    const refused = await take(dataDir).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DataDirLockedError);
    expect(refused).toMatchObject({ pid: first.child.pid });
    expect((refused as Error).message).toContain("DATABASE_URL");
    const other = await holder(dataDir);
    expect(other.line).toMatch(/^refused the embedded database in .* is already open in another process/);

    await killed(first.child); // no cleanup ran: only the kernel released the lock
    const lock = await take(dataDir);
    expect(readFileSync(join(dataDir, "postgres.lock"), "utf8")).toBe(`${process.pid}\n`);
    lock.release();
  });

  it("does not judge a live holder by the pid in its file (another PID namespace shows another pid)", async () => {
    const dataDir = tempDir();
    const first = await holder(dataDir);
    // What a process in another container sees: a pid that is no live process here.
    const dead = spawnSync(process.execPath, ["-e", ""]).pid;
    writeFileSync(join(dataDir, "postgres.lock"), String(dead));
    await expect(take(dataDir)).rejects.toBeInstanceOf(DataDirLockedError);
    // The refused process leaves the holder's lock in place: a third is refused too, and the holder still runs.
    expect((await holder(dataDir)).line).toMatch(/^refused /);
    expect(first.child.exitCode).toBeNull();
  });

  it.each([
    ["a dead pid with a trailing newline", () => `${spawnSync(process.execPath, ["-e", ""]).pid}\n`],
    ["the pid of a live unrelated process", () => `${process.ppid}\n`],
    ["this process's own pid (a restarted container's pid 1)", () => String(process.pid)],
    ["no pid at all", () => "garbage\n"],
  ])("takes a directory whose lock file holds %s but no live lock", async (_what, content) => {
    const dataDir = tempDir();
    writeFileSync(join(dataDir, "postgres.lock"), content());
    const lock = await take(dataDir);
    // One process, one embedded database: a second open here is refused as well.
    await expect(take(dataDir)).rejects.toBeInstanceOf(DataDirLockedError);
    lock.release();
    (await take(dataDir)).release();
  });

  it("a holder's clean exit frees the directory for the next process, whose lock a refused one never removes", async () => {
    const dataDir = tempDir();
    const first = await holder(dataDir);
    const exit = once(first.child, "exit");
    first.child.stdin!.end(); // a clean release
    await exit;
    const second = await holder(dataDir);
    expect(second.line).toMatch(/^locked /);
    await expect(take(dataDir)).rejects.toBeInstanceOf(DataDirLockedError);
    expect((await holder(dataDir)).line).toMatch(/^refused /);
  });

  it("a second `serve` on the directory exits 1 with one line naming DATABASE_URL, no stack", async () => {
    const dataDir = tempDir();
    const first = await holder(dataDir);
    const proc = runCli(["serve"], { DATA_DIR: dataDir, REDIS_URL: inject("redisUrl"), SIGNING_SECRET: TEST_SECRET, PORT: "0" });
    expect((await proc.exited).code).toBe(1);
    const lines = proc.stderr().trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^svc-webhooks: the embedded database in .* is already open in another process .*DATABASE_URL/);
    expect(first.child.exitCode).toBeNull();
  }, 60_000); // two processes start from the TypeScript sources: slow on a busy machine
});
