import { sql } from "kysely";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ChangeEvent } from "../../src/events/change-events.js";
import { createPostgresMirror } from "../../src/mirror/postgres-store.js";
import type { MirrorStore } from "../../src/mirror/store.js";
import { createSyncCheckpoints, type SyncCheckpoints } from "../../src/mirror/sync-checkpoints.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createApiClient, type ApiClient } from "../../src/upstream/index.js";
import { runActivePass } from "../../src/sync/active-tier.js";
import type { SweepChanges } from "../../src/sync/change-source.js";
import { BACKFILL_ALIVE_MS, runFullSlice } from "../../src/sync/full-tier.js";
import { createMirrorWriter } from "../../src/mirror/mirror-writer.js";
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
    const full = await runFullSlice({ api, mirror, checkpoints, changes, intervalMs: 3600_000, maxPages: 1000, kinds: ["orders"], logger });
    expect(full.kinds.orders?.state).toBe("complete");
    expect(await checkpoints.importing("orders")).toBe(false);

    const pending = sandbox.state.orders().find((o) => o.status === "PENDING")!;
    sandbox.silently(() => sandbox.actions.updateOrderStatus(pending.id, "CONFIRMED"));
    recorded = [];
    await runActivePass({ api, mirror, checkpoints, changes, logger });
    expect(recorded.find((e) => e.data.after.id === pending.id)?.data.source).toBe("reconcile");
  });

  it("ends once a newer pass of the kind started on a mirror that was not empty", async () => {
    await interruptedFirstBackfill();
    expect(await checkpoints.importing("orders")).toBe(true);
    await checkpoints.start("full", "orders", { firstImport: false });
    expect(await checkpoints.importing("orders")).toBe(false);
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
