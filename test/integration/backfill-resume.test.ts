import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createPostgresMirror } from "../../src/mirror/mirror-store.js";
import { createSyncCheckpoints } from "../../src/mirror/sync-checkpoints.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { databaseEnv, openDatabaseOfEnv } from "../helpers/postgres.js";
import { waitFor } from "../helpers/wait-for.js";

// `svc-webhooks backfill` as a real child process against the sandbox over HTTP, its checkpoints
// and mirror in a database of its own (the run's server when there is one, else embedded).
let sandbox: Sandbox | undefined;
let procs: CliProcess[] = [];
afterEach(async () => {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await sandbox?.close();
  sandbox = undefined;
  procs = [];
});

async function setUp(extraOrders: number) {
  sandbox = createSandbox();
  const url = await sandbox.listen();
  sandbox.silently(() => {
    for (let i = 0; i < extraOrders; i++) sandbox!.actions.createOrder();
  });
  const env = {
    ...databaseEnv(),
    REDIS_URL: inject("redisUrl"),
    QUEUE_PREFIX: `test-bf-${randomUUID().slice(0, 8)}`,
    API_BASE_URL: url,
    API_KEY: sandbox.apiKey,
    API_RATE: "100000",
    // Where backfill looks for a running service first: a closed port, whatever runs on 3000 here.
    PORT: "9",
  };
  return env;
}

function backfill(env: Record<string, string>, args: string[] = []) {
  const proc = runCli(["backfill", "--kinds", "orders", "--json", ...args], env);
  procs.push(proc);
  return proc;
}

const orderCursors = (s: Sandbox) =>
  s.requestLog.filter((r) => r.path === "/api/v1/orders" && r.status === 200).map((r) => new URLSearchParams(r.query).get("cursor"));

async function readBack(env: Record<string, string>) {
  const db = await openDatabaseOfEnv(env);
  try {
    const orders = await createPostgresMirror(db.db).all("orders");
    const checkpoint = await createSyncCheckpoints(db.db).get("backfill", "orders");
    // Each record's change, whether it became an event (the outbox) or history only (no handler receives it).
    const { rows } = await sql<{ source: string; n: string }>`select source, count(*) as n from (
        select payload->>'source' as source from change_outbox
        union all select payload->>'source' as source from record_changes
      ) changes group by 1`.execute(db.db);
    return { orders, checkpoint, sources: Object.fromEntries(rows.map((r) => [r.source, Number(r.n)])) };
  } finally {
    await db.close();
  }
}

describe("svc-webhooks backfill, resumable", () => {
  it.each(["SIGKILL", "SIGINT"] as const)(
    "killed half-way (%s) goes on at the saved page: no stored page is read again",
    async (signal) => {
      const env = await setUp(964); // 1,000 orders: 10 pages
      // Slow pages, so the run is still going when the signal comes.
      sandbox!.faults.add({ path: "/api/v1/orders", delayMs: 150 });
      const first = backfill(env);
      await waitFor(() => /orders: [3-9]00 records/.test(first.stderr()), { timeoutMs: 60_000, what: "a few pages saved" });
      first.child.kill(signal);
      const exit = await first.exited;
      if (signal === "SIGINT") {
        // Ctrl-C: the page in hand is saved, the summary printed, exit 130.
        expect(exit.code).toBe(130);
        expect(JSON.parse(first.stdout())).toMatchObject({ state: "interrupted" });
      }
      const saved = (await readBack(env)).checkpoint!;
      expect(saved.passCompletedAt).toBeNull();
      expect(saved.pages).toBeGreaterThanOrEqual(3);
      const firstRun = orderCursors(sandbox!);
      sandbox!.requestLog.length = 0;
      sandbox!.faults.clear();

      const second = backfill(env);
      expect((await second.exited).code).toBe(0);
      expect(second.stderr()).toContain("(resumed)");
      const secondRun = orderCursors(sandbox!);
      // It starts at the saved cursor and reads each remaining page once.
      expect(secondRun[0]).toBe(saved.cursor);
      expect(secondRun).toHaveLength(10 - saved.pages);
      const stored = new Set(firstRun.slice(0, saved.pages));
      expect(secondRun.filter((c) => stored.has(c))).toEqual([]);
      expect(JSON.parse(second.stdout())).toEqual({
        backfilled: { orders: 1000 - saved.records, bookings: 0, "menu-items": 0 },
        rejected: {},
        state: "complete",
      });
      const after = await readBack(env);
      expect(after.orders).toHaveLength(1000);
      expect(after.checkpoint).toMatchObject({ records: 1000, pages: 10, firstImport: true });
      // A first import into an empty mirror: backfill, never a missed webhook.
      expect(after.sources).toEqual({ backfill: 1000 });

      // Complete: the next run starts fresh and reads every page again.
      sandbox!.requestLog.length = 0;
      const third = backfill(env);
      expect((await third.exited).code).toBe(0);
      expect(orderCursors(sandbox!)).toHaveLength(10);
    },
    120_000,
  );

  it("--restart reads from the top whatever was saved", async () => {
    const env = await setUp(464); // 500 orders: 5 pages
    sandbox!.faults.add({ path: "/api/v1/orders", status: 500, after: 2 });
    const failed = backfill(env);
    expect((await failed.exited).code).toBe(1);
    expect((await readBack(env)).checkpoint).toMatchObject({ pages: 2, passCompletedAt: null });
    sandbox!.faults.clear();
    sandbox!.requestLog.length = 0;
    const restarted = backfill(env, ["--restart"]);
    expect((await restarted.exited).code).toBe(0);
    expect(orderCursors(sandbox!)[0]).toBeNull();
    expect(orderCursors(sandbox!)).toHaveLength(5);
  }, 60_000);

  it("an upstream that hands back the same cursor stops it after two pages, in one line, exit 1; fixed, the next run goes on", async () => {
    const env = await setUp(164); // 200 orders: 2 pages
    sandbox!.faults.add({ path: "/api/v1/orders", repeatCursor: true });
    const stuck = backfill(env);
    expect((await stuck.exited).code).toBe(1);
    expect(orderCursors(sandbox!)).toHaveLength(2);
    const errorLines = stuck
      .stderr()
      .split("\n")
      .filter((l) => l.startsWith("svc-webhooks:"));
    expect(errorLines).toEqual([expect.stringMatching(/same cursor again.*repeated_cursor.*run backfill again/) as unknown]);
    expect(stuck.stderr()).not.toMatch(/^\s+at /m);
    sandbox!.faults.clear();
    sandbox!.requestLog.length = 0;
    const fixed = backfill(env);
    expect((await fixed.exited).code).toBe(0);
    // From the saved page (the first one's cursor), not the top.
    expect(orderCursors(sandbox!)[0]).not.toBeNull();
    expect((await readBack(env)).orders).toHaveLength(sandbox!.state.orders().length);
  }, 60_000);

  it("--since keeps orders created from that day and stops once the newest-first list went past it", async () => {
    const env = await setUp(464);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const proc = runCli(["backfill", "--kinds", "orders,bookings", "--since", tomorrow, "--json"], env);
    procs.push(proc);
    expect((await proc.exited).code).toBe(0);
    const bookingsFrom = sandbox!.state.bookings().filter((b) => b.date.slice(0, 10) >= tomorrow).length;
    expect(bookingsFrom).toBeGreaterThan(0);
    expect(JSON.parse(proc.stdout())).toMatchObject({ backfilled: { orders: 0, bookings: bookingsFrom }, state: "complete" });
    // Every order was created today: the first page shows the list is past the window.
    expect(orderCursors(sandbox!)).toEqual([null]);
    const bookingQueries = sandbox!.requestLog
      .filter((r) => r.path === "/api/v1/bookings")
      .map((r) => new URLSearchParams(r.query).get("from"));
    expect(bookingQueries).toEqual([tomorrow]);
  }, 60_000);

  it.each([
    ["--since", "2026-02-30"],
    ["--since", "yesterday"],
  ])("refuses %s %s in one line, exit 2", async (...args) => {
    const proc = runCli(["backfill", ...args], { API_BASE_URL: "http://127.0.0.1:9", API_KEY: "svc_live_x" });
    procs.push(proc);
    expect((await proc.exited).code).toBe(2);
    expect(proc.stderr().trim().split("\n")).toEqual([expect.stringContaining("--since takes a date YYYY-MM-DD") as unknown]);
  });
});
