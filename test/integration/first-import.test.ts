import { sql } from "kysely";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createPostgresMirror, type MirrorStore } from "../../src/mirror/mirror-store.js";
import { createMirrorWriter } from "../../src/mirror/change-outbox.js";
import type { ChangeEvent } from "../../src/events/catalog.js";
import { createSyncCheckpoints, type SyncCheckpoints } from "../../src/mirror/sync-checkpoints.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createApiClient, type ApiClient } from "../../src/upstream/client.js";
import { runActivePass } from "../../src/sync/active-tier.js";
import type { SweepChanges } from "../../src/sync/first-import.js";
import type { SyncedKind } from "../../src/mirror/kinds.js";
import { runFullSlice } from "../../src/sync/full-tier.js";
import { BACKFILL_ALIVE_MS, readImportState } from "../../src/sync/first-import.js";
import { runBackfill } from "../../src/sync/resumable-backfill.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";

// A first import marks its checkpoint `first_import`: while it runs, every tier's writes of that
// kind are `backfill`, not missed webhooks. An interrupted first backfill never completes, so the
// mark must end some other way, or every later missed webhook is hidden as `backfill`.
let sandbox: Sandbox;
let api: ApiClient;
let mirror: MirrorStore;
let checkpoints: SyncCheckpoints;
let database: TestDatabase;
let recorded: ChangeEvent[];
let changes: SweepChanges;
const logger = pino({ level: "silent" });

beforeEach(async () => {
  database = await openTestDatabase(preferredDriver());
  mirror = createPostgresMirror(database.db);
  checkpoints = createSyncCheckpoints(database.db);
  recorded = [];
  changes = { writer: createMirrorWriter(mirror, { onRecorded: (c) => recorded.push(...c) }), source: "reconcile" };
  sandbox = createSandbox({});
  api = createApiClient({ baseUrl: await sandbox.listen(), apiKey: sandbox.apiKey, retryBaseMs: 10, readRetries: 0 });
  // More than one page of orders, so a backfill stopped after its first page is unfinished.
  sandbox.silently(() => {
    for (let i = 0; i < 150; i++) sandbox.actions.createOrder();
  });
});
afterEach(async () => {
  await sandbox.close();
  await database.close();
});

/** A first backfill of orders into the empty mirror, stopped (Ctrl-C) after its first page. */
async function interruptedFirstBackfill() {
  const stop = new AbortController();
  const outcome = await runBackfill({
    api,
    mirror,
    checkpoints,
    kinds: ["orders"],
    writer: changes.writer,
    signal: stop.signal,
    onProgress: (p) => {
      if (p.checkpoint.pages >= 1) stop.abort();
    },
  });
  expect(outcome.state).toBe("interrupted");
  expect(await checkpoints.get("backfill", "orders")).toMatchObject({ firstImport: true, passCompletedAt: null });
  // Stopped for good (it saves no page any more): the full tier no longer waits for it to go on.
  await sql`update sync_checkpoints set updated_at = clock_timestamp() - ${`${BACKFILL_ALIVE_MS + 1000} milliseconds`}::interval
    where tier = 'backfill'`.execute(database.db);
}

describe("first_import", () => {
  it("ends once a full pass of the kind completed after an interrupted first backfill: a missed change is reconcile", async () => {
    await interruptedFirstBackfill();
    const full = await runFullSlice({ api, mirror, checkpoints, changes, intervalMs: 3600_000, maxPages: 1000, logger });
    expect(full.kinds.orders?.state).toBe("complete");
    expect((await readImportState({ checkpoints, mirror })).importing("orders")).toBe(false);

    const pending = sandbox.state.orders().find((o) => o.status === "PENDING")!;
    sandbox.silently(() => sandbox.actions.updateOrderStatus(pending.id, "CONFIRMED"));
    recorded = [];
    await runActivePass({ api, mirror, checkpoints, changes, logger });
    expect(recorded.find((e) => e.data.after.id === pending.id)?.data.source).toBe("reconcile");
  });

  it("ends once a newer pass of the kind started on a mirror that was not empty", async () => {
    await interruptedFirstBackfill();
    expect((await readImportState({ checkpoints, mirror })).importing("orders")).toBe(true);
    await checkpoints.start("full", "orders", { firstImport: false });
    expect((await readImportState({ checkpoints, mirror })).importing("orders")).toBe(false);
  });

  it("writes a first import without change events when importChanges is false; the changes after it still produce theirs", async () => {
    const quiet = { ...changes, importChanges: false };
    const full = await runFullSlice({ api, mirror, checkpoints, changes: quiet, intervalMs: 3600_000, maxPages: 1000, logger });
    expect(full.kinds.orders?.state).toBe("complete");
    const first = await mirror.list("orders", { limit: 100 });
    expect(first.data).toHaveLength(100);
    expect(first.nextCursor).not.toBeNull();
    expect(recorded).toEqual([]);
    const pending = sandbox.state.orders().find((o) => o.status === "PENDING")!;
    sandbox.silently(() => sandbox.actions.updateOrderStatus(pending.id, "CONFIRMED"));
    await runActivePass({ api, mirror, checkpoints, changes: quiet, logger });
    expect(recorded.map((e) => [e.data.after.id, e.data.source])).toContainEqual([pending.id, "reconcile"]);
  });

  it("holds while the first import is the newest pass of its kind", async () => {
    await interruptedFirstBackfill();
    const pending = sandbox.state.orders().find((o) => o.status === "PENDING")!;
    sandbox.silently(() => sandbox.actions.updateOrderStatus(pending.id, "CONFIRMED"));
    recorded = [];
    await runActivePass({ api, mirror, checkpoints, changes, logger });
    expect(new Set(recorded.map((e) => e.data.source))).toEqual(new Set(["backfill"]));
  });
});

describe("the active tier while the full tier's first import runs", () => {
  const full = (maxPages: number) => runFullSlice({ api, mirror, checkpoints, changes, intervalMs: 3600_000, maxPages, logger });

  it("leaves the kind the import walks to it, reads the others, and reads it again once the import completed", async () => {
    // A new account's first tick on its empty mirror: one page of orders read, the rest to come.
    expect((await full(1)).kinds.orders?.checkpoint).toMatchObject({ firstImport: true, passCompletedAt: null });
    const during = await runActivePass({ api, mirror, checkpoints, changes, logger });
    expect(during.leftToImport).toEqual(["orders"]);
    expect(Object.keys(during.byKind).sort()).toEqual(["bookings", "menu-items"]);

    expect((await full(1000)).kinds.orders?.state).toBe("complete");
    const after = await runActivePass({ api, mirror, checkpoints, changes, logger });
    expect(after.leftToImport).toEqual([]);
    expect(Object.keys(after.byKind)).toContain("orders");
  });

  it("reads a kind whose running full pass is not a first import", async () => {
    expect((await full(1000)).kinds.orders?.state).toBe("complete");
    const next = await runFullSlice({ api, mirror, checkpoints, changes, intervalMs: 3600_000, maxPages: 1, force: true, logger });
    expect(next.kinds.orders?.checkpoint).toMatchObject({ firstImport: false, passCompletedAt: null });
    expect((await runActivePass({ api, mirror, checkpoints, changes, logger })).leftToImport).toEqual([]);
  });
});

describe("the active tier while a first-import backfill runs", () => {
  /** A backfill of `kinds` in that order, stopped after its first page of orders: as if still running (it saved just now). */
  async function backfillRunning(kinds: SyncedKind[] = ["orders", "bookings", "menu-items"], restart = false) {
    const stop = new AbortController();
    const outcome = await runBackfill({
      api,
      mirror,
      checkpoints,
      kinds,
      restart,
      writer: changes.writer,
      signal: stop.signal,
      onProgress: (p) => {
        if (p.kind === "orders" && p.checkpoint.pages >= 1) stop.abort();
      },
    });
    expect(outcome.state).toBe("interrupted");
  }
  const listCalls = () => sandbox.requestLog.filter((r) => /\/(orders|bookings|menu)/.test(r.path)).length;
  const active = () => runActivePass({ api, mirror, checkpoints, changes, logger });

  it("leaves every kind of the run to it, though a first pass wrote part of them; reads them once the run stopped saving", async () => {
    // The service's first active pass, before the backfill began: the mirror is no longer empty.
    expect((await active()).leftToImport).toEqual([]);
    await backfillRunning();
    // No whole list was walked before: the run is the first import, whatever that pass wrote.
    expect(await checkpoints.get("backfill", "orders")).toMatchObject({ firstImport: true });
    const before = listCalls();
    expect(await active()).toMatchObject({ calls: 0, leftToImport: ["orders", "bookings", "menu-items"] });
    expect(listCalls()).toBe(before);

    await sql`update sync_checkpoints set updated_at = clock_timestamp() - ${`${BACKFILL_ALIVE_MS + 1000} milliseconds`}::interval
      where tier = 'backfill'`.execute(database.db);
    const after = await active();
    expect(after.leftToImport).toEqual([]);
    expect(Object.keys(after.byKind).sort()).toEqual(["bookings", "menu-items", "orders"]);
    expect(listCalls()).toBe(before + after.calls);
  });

  it("leaves a kind the run completed to it until the run ends; reads a kind the run does not hold", async () => {
    await backfillRunning(["menu-items", "orders"]);
    expect(await checkpoints.get("backfill", "menu-items")).toMatchObject({ passCompletedAt: expect.any(Date) as unknown });
    const outcome = await active();
    expect(outcome.leftToImport).toEqual(["orders", "menu-items"]);
    expect(Object.keys(outcome.byKind)).toEqual(["bookings"]);
  });

  it("reads a kind the run re-reads: its whole list was read before the run began", async () => {
    expect((await runBackfill({ api, mirror, checkpoints, kinds: ["orders"], writer: changes.writer })).state).toBe("complete");
    await backfillRunning(["orders", "bookings", "menu-items"], true);
    expect(await checkpoints.get("backfill", "orders")).toMatchObject({ pages: 1, passCompletedAt: null });
    expect((await active()).leftToImport).toEqual(["bookings", "menu-items"]);
  });

  it("a pass that is running when the run begins leaves it the rest, from the next page on", async () => {
    // The service's first pass as the operator starts the first day's backfill: after the first of
    // the PENDING list's two pages.
    const startsRun: ApiClient = {
      ...api,
      listOrders: async (query, opts) => {
        const page = await api.listOrders(query, opts);
        if (query?.status === "PENDING" && !query.cursor)
          for (const kind of ["orders", "bookings", "menu-items"]) await checkpoints.start("backfill", kind, { firstImport: true });
        return page;
      },
    };
    const before = listCalls();
    const outcome = await runActivePass({ api: startsRun, mirror, checkpoints, changes, logger });
    expect(outcome).toMatchObject({ calls: 1, leftToImport: ["orders", "bookings", "menu-items"], leftOpen: 0 });
    expect(sandbox.requestLog.slice(before).map((r) => r.query)).toEqual([expect.stringContaining("status=PENDING")]);
    expect(listCalls()).toBe(before + 1);
  });

  it("a catch-up reads every kind all the same: a gap's changes to records the run already passed had no webhook", async () => {
    await backfillRunning();
    const gapStart = new Date(Date.now() - 60_000);
    const outcome = await runActivePass({ api, mirror, checkpoints, changes, logger, catchUp: { gapStart } });
    expect(outcome.leftToImport).toEqual([]);
    expect(Object.keys(outcome.byKind).sort()).toEqual(["bookings", "menu-items", "orders"]);
  });
});
