import { sql } from "kysely";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createPostgresMirror, type MirrorStore } from "../../src/mirror/mirror-store.js";
import { createMirrorWriter } from "../../src/mirror/change-outbox.js";
import { createSyncCheckpoints, type SyncCheckpoints } from "../../src/mirror/sync-checkpoints.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createApiClient, type ApiClient } from "../../src/upstream/client.js";
import { runFullSlice } from "../../src/sync/full-tier.js";
import { BACKFILL_ALIVE_MS } from "../../src/sync/first-import.js";
import { runBackfill } from "../../src/sync/resumable-backfill.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";

// Issue 32 item 5: on the first day the full tier and a user's backfill each walked the whole
// order list at once (412 order calls for a 200-page list). A backfill of the whole list is the pass.
let sandbox: Sandbox;
let api: ApiClient;
let database: TestDatabase;
let mirror: MirrorStore;
let checkpoints: SyncCheckpoints;
const logger = pino({ level: "silent" });

beforeEach(async () => {
  sandbox = createSandbox();
  api = createApiClient({ baseUrl: await sandbox.listen(), apiKey: sandbox.apiKey, retryBaseMs: 10 });
  // 300 orders and more: three pages at least.
  sandbox.silently(() => {
    for (let i = 0; i < 300; i++) sandbox.actions.createOrder();
  });
  database = await openTestDatabase(preferredDriver());
  mirror = createPostgresMirror(database.db);
  checkpoints = createSyncCheckpoints(database.db);
});
afterEach(async () => {
  await sandbox.close();
  await database.close();
});

const orderCalls = () => sandbox.requestLog.filter((r) => r.path === "/api/v1/orders").length;
const slice = (force = false) =>
  runFullSlice({
    api,
    mirror,
    checkpoints,
    changes: { writer: createMirrorWriter(mirror), source: "reconcile" },
    intervalMs: 3_600_000,
    maxPages: 1,
    force,
    logger,
  });

/** A backfill of the orders (`since`: its window) that saved one page and is stopped there, as if still running. */
async function backfillOnePage(since: string | null = null) {
  const stop = new AbortController();
  const outcome = await runBackfill({
    api,
    mirror,
    checkpoints,
    kinds: ["orders"],
    since,
    signal: stop.signal,
    logger,
    onProgress: (p) => {
      if (p.checkpoint.pages >= 1) stop.abort();
    },
  });
  expect(outcome.state).toBe("interrupted");
}

describe("the full tier while a backfill walks the whole list", () => {
  it("starts no pass of that kind, and does not go on with the one it had begun, not even when forced", async () => {
    expect((await slice()).pages).toBe(1); // a full pass begun: one page read
    await backfillOnePage();
    const before = orderCalls();
    // The slices go on to the other kinds; the orders are the backfill's.
    expect((await slice()).kinds.orders).toBeUndefined();
    expect((await slice(true)).kinds.orders).toBeUndefined();
    expect(orderCalls()).toBe(before);
    expect(await checkpoints.get("full", "orders")).toMatchObject({ pages: 1, passCompletedAt: null });
  });

  it("stops a slice that is walking the kind before its next page once the backfill begins", async () => {
    // 300 orders and more: a slice of 5 pages would read 4 (every page of the list).
    let saved = 0;
    const watched: SyncCheckpoints = {
      ...checkpoints,
      // After the slice's second page, a user's backfill of the whole list begins.
      advance: async (from, to) => {
        const ok = await checkpoints.advance(from, to);
        if (from.tier === "full" && ++saved === 2) await checkpoints.start("backfill", "orders", { firstImport: true });
        return ok;
      },
    };
    const outcome = await runFullSlice({
      api,
      mirror,
      checkpoints: watched,
      changes: { writer: createMirrorWriter(mirror), source: "reconcile" },
      intervalMs: 3_600_000,
      maxPages: 5,
      logger,
    });
    expect(outcome.kinds.orders?.state).toBe("paused");
    // The third page was asked for while the second was written, and dropped unwritten.
    expect(orderCalls()).toBe(3);
    // Paused, not ended: should the backfill stop for good, the pass goes on from page 2.
    expect(await checkpoints.get("full", "orders")).toMatchObject({ pages: 2, passCompletedAt: null });
  });

  it("leaves a kind the running backfill has not reached yet to it: bookings wait while the backfill is on orders", async () => {
    const stop = new AbortController();
    await runBackfill({
      api,
      mirror,
      checkpoints,
      kinds: ["orders", "bookings"],
      signal: stop.signal,
      logger,
      onProgress: (p) => {
        if (p.kind === "orders" && p.checkpoint.pages >= 1) stop.abort();
      },
    });
    const bookingCalls = () => sandbox.requestLog.filter((r) => r.path === "/api/v1/bookings").length;
    const before = bookingCalls();
    const outcome = await runFullSlice({
      api,
      mirror,
      checkpoints,
      changes: { writer: createMirrorWriter(mirror), source: "reconcile" },
      intervalMs: 3_600_000,
      maxPages: 5,
      logger,
    });
    // Only the menus, which the run does not walk, are the slice's.
    expect(Object.keys(outcome.kinds)).toEqual(["menu-items"]);
    expect(bookingCalls()).toBe(before);
  });

  it("ends the pass it had begun once the backfill has read the whole list since, and starts none until one is due", async () => {
    expect((await slice()).pages).toBe(1);
    expect((await runBackfill({ api, mirror, checkpoints, kinds: ["orders"], logger })).state).toBe("complete");
    const before = orderCalls();
    expect((await slice()).kinds.orders).toBeUndefined();
    expect(orderCalls()).toBe(before);
    const ended = await checkpoints.get("full", "orders");
    expect(ended?.passCompletedAt).not.toBeNull();
    // Not a complete full pass of its own: its metric stays where it was.
    expect(ended?.lastCompleteAt).toBeNull();
  });

  it("goes on once the backfill has not saved a page for BACKFILL_ALIVE_MS (it crashed or was stopped)", async () => {
    await backfillOnePage();
    await sql`update sync_checkpoints set updated_at = clock_timestamp() - ${`${BACKFILL_ALIVE_MS + 1000} milliseconds`}::interval
      where tier = 'backfill'`.execute(database.db);
    const before = orderCalls();
    const outcome = await slice();
    expect(outcome.pages).toBe(1);
    expect(outcome.kinds.orders?.state).toBe("paused");
    expect(orderCalls()).toBe(before + 1);
  });

  it("is not held back by a backfill with --since: that one reads a window, not the whole list", async () => {
    await backfillOnePage("2000-01-01");
    expect((await slice()).pages).toBe(1);
  });
});
