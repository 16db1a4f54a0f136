import type { Job } from "bullmq";
import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createEventLog, type EventAttempt, type EventLog, type HandlerAttempt } from "../../src/mirror/event-log.js";
import { KEPT_ATTEMPTS_PER_HANDLER } from "../../src/mirror/event-log.js";
import type { EventJobData } from "../../src/queue/events-queue.js";
import { pruneEventLog } from "../../src/worker/worker-lifecycle.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextJob } from "../helpers/job-events.js";
import { moduleHandlers } from "../helpers/module-handlers.js";
import { openTestDatabase, testDrivers, type TestDatabase } from "../helpers/postgres.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

// Every attempt of every handler is a row of the event log (handler_attempts), written in the
// statement that records the attempt, kept as long as its event and at most the latest
// KEPT_ATTEMPTS_PER_HANDLER per handler.

const T0 = Date.parse("2026-11-24T10:00:00.000Z");

describe.each(testDrivers())("handler attempts in the event log (%s)", (driver) => {
  let database: TestDatabase;
  let log: EventLog;
  beforeAll(async () => {
    database = await openTestDatabase(driver);
    log = createEventLog(database.db);
  });
  afterAll(() => database.close());
  beforeEach(() => database.truncate());

  /** Attempt `n` of 5 at `id`, in which `handler` ended as `status` (a failure retried a second after it started). */
  const attempt = (id: string, n: number, status: "ok" | "failed", handler = "user:order.created"): EventAttempt => ({
    id,
    type: "order.created",
    payload: { id },
    status: status === "ok" ? "handled" : "received",
    handlers: {
      [handler]: {
        status,
        ...(status === "failed" ? { error: `printer offline (try ${n})` } : {}),
        run: {
          attempt: n,
          of: 5,
          startedAt: T0 + n * 60_000,
          durationMs: 12,
          ...(status === "failed" ? { nextRetryAt: T0 + n * 60_000 + 1000 } : {}),
        },
      },
    },
  });
  const numbers = (rows: HandlerAttempt[], handler = "user:order.created") =>
    rows.filter((r) => r.handler === handler).map((r) => r.attempt);

  it("keeps one row per attempt of each handler: when, how long, outcome, error and next retry", async () => {
    await log.recordAttempt(attempt("evt_1", 1, "failed"));
    await log.recordAttempt(attempt("evt_1", 2, "ok"));
    // A handler without a run (a caller of the log's own) is an outcome and no row.
    await log.recordAttempt({
      id: "evt_1",
      type: "order.created",
      payload: {},
      status: "handled",
      handlers: { "app:audit": { status: "ok" } },
    });
    expect(await log.handlerAttempts("evt_1")).toEqual([
      {
        handler: "user:order.created",
        replay: 0,
        attempt: 1,
        of: 5,
        startedAt: new Date(T0 + 60_000),
        durationMs: 12,
        outcome: "failed",
        error: "printer offline (try 1)",
        nextRetryAt: new Date(T0 + 61_000),
      },
      {
        handler: "user:order.created",
        replay: 0,
        attempt: 2,
        of: 5,
        startedAt: new Date(T0 + 120_000),
        durationMs: 12,
        outcome: "ok",
        error: null,
        nextRetryAt: null,
      },
    ]);
    expect((await log.get("evt_1"))?.attempts).toBe(3);
    expect(await log.handlerAttempts("evt_none")).toEqual([]);
  });

  it("keeps two runs that share a number (replays run at once) apart, and a run recorded again as one row", async () => {
    const run = (startedAt: number) => ({
      id: "evt_twice",
      type: "order.created",
      payload: {},
      status: "handled" as const,
      handlers: { "user:order.created": { status: "ok" as const, run: { attempt: 2, of: 6, startedAt, durationMs: 5 } } },
    });
    await log.recordAttempt(run(T0));
    await log.recordAttempt(run(T0 + 7));
    // The first one's record again (its answer was lost): the same row.
    await log.recordAttempt(run(T0));
    const rows = await log.handlerAttempts("evt_twice");
    expect(rows.map((r) => [r.attempt, r.startedAt.getTime()])).toEqual([
      [2, T0],
      [2, T0 + 7],
    ]);
  });

  it("bounds an error as the event's own outcome is, and refuses a run that is not one", async () => {
    const long = attempt("evt_long", 1, "failed");
    long.handlers["user:order.created"]!.error = "x".repeat(20_000);
    await log.recordAttempt(long);
    expect((await log.handlerAttempts("evt_long"))[0]?.error).toBe(`${"x".repeat(8192)}… [cut: 11808 of 20000 characters]`);
    const bad = attempt("evt_bad", 1, "ok");
    bad.handlers["user:order.created"]!.run = { attempt: 0, of: 5, startedAt: T0, durationMs: 1 };
    await expect(log.recordAttempt(bad)).rejects.toMatchObject({ code: "invalid_event", field: "run" });
    expect(await log.get("evt_bad")).toBeUndefined();
  });

  it(`keeps each handler's attempts within ${KEPT_ATTEMPTS_PER_HANDLER} of its latest, however often an event is replayed`, async () => {
    const total = KEPT_ATTEMPTS_PER_HANDLER + 7;
    for (let n = 1; n <= total; n++) {
      await log.recordAttempt(attempt("evt_loop", n, "failed"));
      // Another handler of the same event, run on the first attempts only, keeps its own.
      if (n <= 3) await log.recordAttempt(attempt("evt_loop", n, "ok", "sync:order.created"));
    }
    const rows = await log.handlerAttempts("evt_loop");
    expect(numbers(rows)).toEqual(Array.from({ length: KEPT_ATTEMPTS_PER_HANDLER }, (_, i) => total - KEPT_ATTEMPTS_PER_HANDLER + 1 + i));
    expect(numbers(rows, "sync:order.created")).toEqual([1, 2, 3]);
    // The log still counts every attempt.
    expect((await log.get("evt_loop"))?.handlers["user:order.created"]?.attempts).toBe(total);
  });

  it("takes an event's attempts with it when retention prunes the event, and leaves a newer event's", async () => {
    await log.recordAttempt(attempt("evt_old", 1, "failed"));
    await log.recordAttempt(attempt("evt_old", 2, "ok"));
    await log.recordAttempt(attempt("evt_new", 1, "ok"));
    await database.db.updateTable("events").set({ received_at: "2026-01-01T00:00:00Z" }).where("id", "=", "evt_old").execute();
    expect(await pruneEventLog(log, 30, 1)).toBe(1);
    expect(await log.handlerAttempts("evt_old")).toEqual([]);
    expect(numbers(await log.handlerAttempts("evt_new"))).toEqual([1]);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from handler_attempts`.execute(database.db);
    expect(rows[0]?.n).toBe(1);
  });

  it("answers which events wait for a retry: the job each waits in, its run's failed handlers, latest attempt and retry time", async () => {
    // Attempt n: the user's handler fails again, the audit handler ends as `audit`; the event waits in one job.
    const both = (n: number, audit: "ok" | "failed"): EventAttempt => {
      const a = attempt("evt_w", n, "failed");
      return { ...a, handlers: { ...a.handlers, ...attempt("evt_w", n, audit, "app:audit").handlers }, job: "1700000000000-0" };
    };
    await log.recordAttempt(both(1, "failed"));
    await log.recordAttempt(both(2, "ok"));
    await log.recordAttempt(attempt("evt_done", 1, "ok"));
    await log.recordAttempt({ ...attempt("evt_x", 1, "failed"), job: "replay-1" });

    const waiting = await log.waiting(undefined, 10);
    expect(waiting.map((w) => w.id)).toEqual(["evt_w", "evt_x"]);
    expect(waiting[0]).toMatchObject({
      job: "1700000000000-0",
      retry: ["user:order.created"],
      attempt: { number: 2, of: 5 },
      nextRetryAt: new Date(T0 + 2 * 60_000 + 1000),
      payload: { id: "evt_w" },
    });
    // Paged in (receivedAt, id) order.
    const [first] = await log.waiting(undefined, 1);
    expect(await log.waiting(first, 10)).toMatchObject([{ id: "evt_x", job: "replay-1" }]);
  });
});

describe("a handler that fails twice, then succeeds, on the delivery path (Redis, the stream and the events queue)", () => {
  let svc: TestService;
  const seen: number[] = [];
  beforeAll(async () => {
    svc = await startService({ JOB_ATTEMPTS: "5", JOB_BACKOFF_MS: "200" }, [
      moduleHandlers({
        "guest.arrived": (_event, ctx) => {
          seen.push(ctx.attempt);
          if (seen.length <= 2) throw new Error(`table ${seen.length} not ready`);
        },
      }),
    ]);
  });
  afterAll(() => svc.stop());

  it("gives three rows, numbered as the log lines and ctx.attempt number them, each retry at the time its row names", async () => {
    const worker = svc.service.worker!.eventWorker;
    const event = sampleEvent({ type: "guest.arrived", data: {} });
    const ofEvent = (job: Job<EventJobData>) => job.data.id === event.id;
    // The second attempt (the events queue's first run of the event) fails; the third completes.
    const secondFailed = nextJob(worker, "failed", ofEvent).then((job) => ({ job, at: Date.now() }));
    const completed = nextJob(worker, "completed", ofEvent);
    expect((await svc.deliver(event)).status).toBe(200);
    const { job, at } = await secondFailed;
    await completed;
    await waitFor(async () => (await svc.service.eventLog.get(event.id))?.status === "handled", { what: "the event handled" });

    const rows = await svc.service.eventLog.handlerAttempts(event.id);
    expect(rows.map((r) => [r.attempt, r.of, r.outcome, r.error])).toEqual([
      [1, 5, "failed", "Error: table 1 not ready"],
      [2, 5, "failed", "Error: table 2 not ready"],
      [3, 5, "ok", null],
    ]);
    expect(seen).toEqual([1, 2, 3]);
    // One line per failed attempt, naming the handler and its error, and nothing else of the failure.
    const key = rows[0]?.handler ?? "";
    const lines = svc.logs.records().filter((r) => r.eventId === event.id && Number(r.level) >= 40);
    expect(lines.map((r) => [r.msg, r.attempt, r.handlers])).toEqual([
      ["event failed, will retry", 1, { [key]: "Error: table 1 not ready" }],
      ["event failed, will retry", 2, { [key]: "Error: table 2 not ready" }],
    ]);

    const [first, second, third] = rows as [HandlerAttempt, HandlerAttempt, HandlerAttempt];
    expect(third.nextRetryAt).toBeNull();
    for (const [row, next] of [
      [first, second],
      [second, third],
    ] as const) {
      expect(row.nextRetryAt!.getTime()).toBeGreaterThanOrEqual(row.startedAt.getTime() + row.durationMs);
      // Each retry started no earlier than its row said it would come.
      expect(next.startedAt.getTime()).toBeGreaterThanOrEqual(row.nextRetryAt!.getTime());
    }
    // And it waited the very delay the row was recorded with: the stream's continuation job was
    // added with it after the first attempt's record, BullMQ retried the job with the second's.
    const firstBase = first.nextRetryAt!.getTime() - job.opts.delay!;
    expect(firstBase).toBeGreaterThanOrEqual(first.startedAt.getTime());
    expect(firstBase).toBeLessThanOrEqual(job.timestamp);
    const secondBase = second.nextRetryAt!.getTime() - job.delay;
    expect(secondBase).toBeGreaterThanOrEqual(second.startedAt.getTime());
    expect(secondBase).toBeLessThanOrEqual(at);
  });

  it("numbers a replay's attempts in a run of its own, in its row, its log lines and ctx.attempt", async () => {
    const [event] = (await svc.service.eventLog.query({ type: "guest.arrived" })).data;
    const replay = await fetch(`${svc.url}/events/${event!.id}/replay`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(replay.status).toBe(202);
    await waitFor(async () => (await svc.service.eventLog.get(event!.id))?.attempts === 4, { what: "the replay's attempt" });
    const rows = await svc.service.eventLog.handlerAttempts(event!.id);
    // A replay is a run of its own: attempt 1 of JOB_ATTEMPTS (5), replay 1.
    expect(rows.at(-1)).toMatchObject({ replay: 1, attempt: 1, of: 5, outcome: "ok" });
    expect(seen.at(-1)).toBe(1);
    // GET /events/{id} shows the rows.
    const shown = (await (await svc.admin(`/events/${event!.id}`)).json()) as { handlerAttempts: { attempt: number; replay: number }[] };
    expect(shown.handlerAttempts.map((r) => [r.replay, r.attempt])).toEqual([
      [0, 1],
      [0, 2],
      [0, 3],
      [1, 1],
    ]);
  });
});
