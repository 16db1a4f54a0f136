import { randomUUID } from "node:crypto";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { sql } from "kysely";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { createChangeOutbox, type ChangeOutbox } from "../../src/mirror/change-outbox.js";
import { createPostgresMirror } from "../../src/mirror/mirror-store.js";
import type { MirrorStore } from "../../src/mirror/mirror-store.js";
import { type EventJobData, EVENTS_QUEUE } from "../../src/queue/events-queue.js";
import { createChangeRelay, type ChangeRelayOptions } from "../../src/worker/change-feed.js";
import { createMirrorWriter } from "../../src/mirror/change-outbox.js";
import { createEventLog } from "../../src/mirror/event-log.js";
import { changeListenersOf } from "../../src/events/change-listeners.js";
import { onChange } from "../../src/events/catalog.js";
import { later, menuItemRecord, orderRecord, reviewRecord } from "../helpers/mirror-records.js";
import { openTestDatabase, testDrivers, type TestDatabase } from "../helpers/postgres.js";
import { waitFor } from "../helpers/wait-for.js";

const silent = pino({ level: "silent" });

describe.each(testDrivers())("change outbox and relay (%s)", (driver) => {
  let database: TestDatabase;
  let mirror: MirrorStore;
  let outbox: ChangeOutbox;
  let redis: Redis;
  let queue: Queue<EventJobData>;
  let prefix: string;
  let t0: Date;
  beforeAll(async () => {
    database = await openTestDatabase(driver);
    mirror = createPostgresMirror(database.db);
    outbox = createChangeOutbox(database.db);
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
  });
  afterAll(async () => {
    await redis.quit();
    await database.close();
  });
  beforeEach(async () => {
    await database.truncate();
    t0 = await mirror.clock();
    prefix = `test-relay-${randomUUID().slice(0, 8)}`;
    queue = new Queue<EventJobData>(EVENTS_QUEUE, { connection: redis, prefix });
  });
  afterEach(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
  });

  const relay = (extra: Partial<ChangeRelayOptions> = {}) =>
    createChangeRelay({ outbox, queue, dedupWindowMs: 60_000, intervalMs: 0, logger: silent, ...extra });
  const outboxRows = () => database.db.selectFrom("change_outbox").select(["id", "type", "payload"]).orderBy("seq").execute();
  const waitingJobs = async () => (await queue.getJobs(["waiting"], 0, -1, true)).map((j) => ({ id: j.id, name: j.name, data: j.data }));

  it("records one outbox row per change in the write's transaction; no-op rewrites and reviews record none", async () => {
    const writer = createMirrorWriter(mirror);
    await writer.write("orders", [orderRecord("ord_1"), orderRecord("ord_2")], t0, "webhook");
    await writer.write("orders", [orderRecord("ord_1")], later(t0, 1), "webhook"); // the same content read later
    await writer.write("orders", [orderRecord("ord_2", { status: "READY" })], later(t0, 2), "reconcile");
    await writer.write("orders", [orderRecord("ord_2", { status: "CONFIRMED" })], later(t0, 3), "webhook"); // stale: refused
    await writer.write("menu-items", [menuItemRecord("mi_1")], t0, "backfill");
    await writer.write("reviews", [reviewRecord("rev_1")], t0, "webhook");
    const rows = await outboxRows();
    expect(rows.map((r) => [r.type, r.payload.id, r.payload.source, r.payload.changed])).toEqual([
      ["change.order", "ord_1", "webhook", Object.keys(orderRecord("ord_1")).sort()],
      ["change.order", "ord_2", "webhook", Object.keys(orderRecord("ord_2")).sort()],
      ["change.order", "ord_2", "reconcile", ["status"]],
      ["change.menu_item", "mi_1", "backfill", Object.keys(menuItemRecord("mi_1")).sort()],
    ]);
    expect(rows[2]!.payload).toMatchObject({
      kind: "order",
      restaurantId: "rest_1",
      before: orderRecord("ord_2"),
      after: orderRecord("ord_2", { status: "READY" }),
    });
    expect(rows.every((r) => /^chg_[0-9a-f]{32}$/.test(r.id))).toBe(true);
  });

  it("writes an outbox row only for a change a handler receives; the others are their records' history, an import one entry", async () => {
    // What a worker whose only change handler is onChange(order, { source: webhook }) answers.
    const listens = changeListenersOf([onChange("order", { field: "status", source: "webhook" }, () => undefined)]);
    const writer = createMirrorWriter(mirror, { listens });
    await writer.write("orders", [orderRecord("ord_1")], t0, "backfill");
    await writer.write("orders", [orderRecord("ord_1", { status: "READY" })], later(t0, 1), "reconcile");
    await writer.write("orders", [orderRecord("ord_1", { status: "DELIVERED" })], later(t0, 2), "webhook");
    await writer.write("menu-items", [menuItemRecord("mi_1")], t0, "webhook");
    const rows = await outboxRows();
    expect(rows.map((r) => [r.type, r.payload.id, r.payload.source, r.payload.changed])).toEqual([
      ["change.order", "ord_1", "webhook", ["status"]],
    ]);
    const history = await database.db
      .selectFrom("record_changes")
      .select(["type", "record_kind", "record_id", "payload"])
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    expect(history.map((r) => [r.type, r.record_kind, r.record_id, r.payload.source])).toEqual([
      ["change.order", "orders", "ord_1", "backfill"],
      ["change.order", "orders", "ord_1", "reconcile"],
      ["change.menu_item", "menu-items", "mi_1", "webhook"],
    ]);
    // The import is one entry without the record (the mirror holds it); a later change keeps before and after.
    expect(history[0]!.payload).toMatchObject({ before: null, after: null, changed: [] });
    expect(history[1]!.payload).toMatchObject({
      before: orderRecord("ord_1"),
      after: orderRecord("ord_1", { status: "READY" }),
      changed: ["status"],
    });
    // A writer that is told nothing of the handlers makes every change an event, as before.
    await createMirrorWriter(mirror).write("orders", [orderRecord("ord_2")], t0, "backfill");
    expect(await outbox.pending()).toBe(2);
  });

  it("the event log's prune deletes the history recorded before its cutoff, in batches, and keeps the rest", async () => {
    const writer = createMirrorWriter(mirror, { listens: () => false });
    for (const id of ["ord_1", "ord_2", "ord_3"]) await writer.write("orders", [orderRecord(id)], t0, "webhook");
    await writer.write("orders", [orderRecord("ord_4")], t0, "webhook");
    await database.db
      .updateTable("record_changes")
      .set({ created_at: new Date("2026-10-01T00:00:00Z") })
      .where("record_id", "!=", "ord_4")
      .execute();
    await createEventLog(database.db).prune(new Date("2026-10-02T00:00:00Z"), 2);
    const left = await database.db.selectFrom("record_changes").select("record_id").execute();
    expect(left.map((r) => r.record_id)).toEqual(["ord_4"]);
  });

  it("a writer told not to record (backfill --no-changes) writes the mirror and no outbox row", async () => {
    await createMirrorWriter(mirror, { record: false }).write("orders", [orderRecord("ord_1")], t0, "backfill");
    expect(await mirror.get("orders", "ord_1")).toEqual(orderRecord("ord_1"));
    expect(await outbox.pending()).toBe(0);
  });

  it("a failed mirror write leaves no change behind (same transaction)", async () => {
    const writer = createMirrorWriter(mirror);
    // A malformed record no longer fails a write (it is set aside): fail this one at commit
    // instead, after its change rows were inserted, with a deferred constraint the two orders break.
    await sql`alter table orders add constraint one_total unique (total) deferrable initially deferred`.execute(database.db);
    try {
      await expect(writer.write("orders", [orderRecord("ord_1"), orderRecord("ord_2")], t0, "webhook")).rejects.toThrow(/one_total/);
    } finally {
      await sql`alter table orders drop constraint one_total`.execute(database.db);
    }
    expect(await outbox.pending()).toBe(0);
    expect(await mirror.all("orders")).toEqual([]);
  });

  it("relays in write order, with the change id as job id and event id, and empties the outbox", async () => {
    const writer = createMirrorWriter(mirror);
    for (let i = 1; i <= 5; i++) await writer.write("orders", [orderRecord("ord_1", { tip: i })], later(t0, i), "webhook");
    const ids = (await outboxRows()).map((r) => r.id);
    const r = relay({ batchSize: 2 });
    expect(await r.drain()).toBe(5);
    await r.stop();
    const jobs = await waitingJobs();
    expect(jobs.map((j) => j.id)).toEqual(ids);
    expect(jobs.map((j) => (j.data.payload.data as { after: { tip: number } }).after.tip)).toEqual([1, 2, 3, 4, 5]);
    expect(jobs[0]).toMatchObject({
      name: "change.order",
      data: { id: ids[0], type: "change.order", payload: { id: ids[0], type: "change.order", data: { kind: "order", source: "webhook" } } },
    });
    expect(await outbox.pending()).toBe(0);
  });

  it("keeps the trace context of the write that recorded a change for its job; a write outside any trace stores and sends none", async () => {
    const traceparent = `00-${"a1".repeat(16)}-${"b2".repeat(8)}-01`;
    await createMirrorWriter(mirror, { traceparent: () => traceparent }).write("orders", [orderRecord("ord_1")], t0, "webhook");
    await createMirrorWriter(mirror, { traceparent: () => undefined }).write("orders", [orderRecord("ord_2")], t0, "webhook");
    await createMirrorWriter(mirror).write("orders", [orderRecord("ord_3")], t0, "webhook");
    const stored = await database.db.selectFrom("change_outbox").select(["traceparent"]).orderBy("seq").execute();
    expect(stored.map((r) => r.traceparent)).toEqual([traceparent, null, null]);
    // Tracing off in the relaying process (no tracer): the job carries the recorded context as is.
    const r = relay();
    expect(await r.drain()).toBe(3);
    await r.stop();
    const jobs = await waitingJobs();
    expect(jobs.map((j) => j.data.traceparent)).toEqual([traceparent, undefined, undefined]);
    expect(jobs.map((j) => "traceparent" in j.data)).toEqual([true, false, false]);
  });

  it("a crash between the add and the delete re-sends the batch, and BullMQ drops it whether the first jobs still exist or were removed", async () => {
    const writer = createMirrorWriter(mirror);
    await writer.write("orders", [orderRecord("ord_1"), orderRecord("ord_2")], t0, "webhook");
    const ids = (await outboxRows()).map((r) => r.id);
    const crashing = relay({
      afterAdd: () => Promise.reject(new Error("crashed before the delete")),
    });
    await expect(crashing.drain()).rejects.toThrow("crashed");
    await crashing.stop();
    expect(await outbox.pending()).toBe(2); // rolled back: still there
    expect((await waitingJobs()).map((j) => j.id)).toEqual(ids);

    // The first job still exists: the re-send adds nothing.
    const second = relay();
    expect(await second.drain()).toBe(2);
    expect((await waitingJobs()).map((j) => j.id)).toEqual(ids);
    expect(await outbox.pending()).toBe(0);

    await second.stop();

    // The first job was handled and removed on completion; the same row sent once more is dropped too.
    await writer.write("orders", [orderRecord("ord_3")], t0, "webhook");
    const third = (await outboxRows())[0]!;
    // A queue whose jobs are removed on completion, as a deployment's retention may do.
    const removing = new Queue<EventJobData>(EVENTS_QUEUE, { connection: redis, prefix, defaultJobOptions: { removeOnComplete: true } });
    const crashAgain = relay({ queue: removing, afterAdd: () => Promise.reject(new Error("crashed again")) });
    await expect(crashAgain.drain()).rejects.toThrow();
    await crashAgain.stop();
    const handled: string[] = [];
    const worker = new Worker<EventJobData>(
      EVENTS_QUEUE,
      (job) => {
        handled.push(job.id!);
        return Promise.resolve();
      },
      { connection: redis, prefix },
    );
    try {
      await waitFor(async () => handled.includes(third.id) && (await queue.getJob(third.id)) === undefined, {
        what: "the job to complete and be removed",
      });
      const resend = relay({ queue: removing });
      expect(await resend.drain()).toBe(1);
      await resend.stop();
      expect(await queue.getJob(third.id)).toBeUndefined();
      expect(await queue.getJobCounts("waiting", "active", "delayed")).toEqual({ waiting: 0, active: 0, delayed: 0 });
      expect(handled.filter((id) => id === third.id)).toHaveLength(1);
    } finally {
      await worker.close();
      await removing.close();
    }
    expect(await outbox.pending()).toBe(0);
  });

  it("stop waits for the batch in hand; a relay turned off (interval 0) ignores pokes", async () => {
    const writer = createMirrorWriter(mirror);
    await writer.write("orders", [orderRecord("ord_1")], t0, "webhook");
    const off = relay({ intervalMs: 0 });
    off.start();
    off.poke();
    await off.stop();
    expect(await outbox.pending()).toBe(1);

    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let added!: () => void;
    const inHand = new Promise<void>((r) => (added = r));
    const slow = relay({
      intervalMs: 60_000,
      afterAdd: async () => {
        added();
        await held;
      },
    });
    slow.start(); // relays at once, then every minute
    await inHand;
    let stopped = false;
    const stopping = slow.stop().then(() => (stopped = true));
    await Promise.resolve();
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(await outbox.pending()).toBe(0);
    expect((await waitingJobs()).length).toBe(1);
  });
});
