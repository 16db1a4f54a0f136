import { UnrecoverableError } from "bullmq";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { replayEvents } from "../../src/worker/replays.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextJob, nextFinished } from "../helpers/job-events.js";
import { startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

let svc: TestService | undefined;
afterEach(async () => {
  await svc?.stop();
  svc = undefined;
});

const review = (id: string) => sampleEvent({ id: `evt_${id}`, type: "review.created", data: { id, restaurantId: "rest_1", rating: 3 } });

describe("the event log, as the service keeps it", () => {
  it("records each event a worker takes and what every handler did; answers GET /events", async () => {
    let broken = true;
    const calls = { flaky: 0, steady: 0 };
    svc = await startService({}, [
      {
        "review.created": () => {
          calls.steady++;
        },
      },
      {
        "review.created": () => {
          calls.flaky++;
          if (broken) throw new UnrecoverableError("the receipt printer is on fire");
        },
      },
    ]);
    const worker = svc.service.worker!.eventWorker;
    const failed = nextJob(worker, "failed");
    await svc.deliver(review("rev_log"));
    await failed;

    const logged = await svc.service.eventLog.get("evt_rev_log");
    expect(logged).toMatchObject({ type: "review.created", status: "failed", attempts: 1 });
    expect(logged!.handlers["user0:review.created"]).toMatchObject({ status: "ok" });
    expect(logged!.handlers["user1:review.created"]).toMatchObject({
      status: "failed",
      error: expect.stringContaining("receipt printer") as unknown,
    });
    expect(logged!.payload).toMatchObject({ data: { id: "rev_log" } });

    const page = (await (await svc.admin("/events?type=review.*&status=failed")).json()) as {
      data: { id: string }[];
      nextCursor: string | null;
    };
    expect(page.data.map((e) => e.id)).toEqual(["evt_rev_log"]);
    expect(await (await svc.admin("/events/evt_rev_log")).json()).toMatchObject({ id: "evt_rev_log", status: "failed" });
    expect((await svc.admin("/events/evt_nope")).status).toBe(404);
    const bad = await svc.admin("/events?status=exploded");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: "invalid_filter" } });
    expect((await fetch(`${svc.url}/events`)).status).toBe(401);

    // Replaying yesterday's failures, aimed at the handler that failed: a deliberate redelivery
    // the dedup window does not drop, and the handler that succeeded does not run again.
    broken = false;
    const queue = svc.service.eventsQueue;
    expect(await replayEvents({ eventLog: svc.service.eventLog, queue }, { query: { status: "failed" }, dryRun: true })).toBe(1);
    expect(await queue.getWaitingCount()).toBe(0);
    const handled = nextJob(worker, "completed");
    expect(
      await replayEvents(
        { eventLog: svc.service.eventLog, queue },
        { query: { status: "failed", handler: "user1:review.created", handlerStatus: "failed" }, handler: "user1:review.created" },
      ),
    ).toBe(1);
    await handled;
    expect(calls).toEqual({ flaky: 2, steady: 1 });
    expect(await svc.service.eventLog.get("evt_rev_log")).toMatchObject({ status: "handled", attempts: 2 });
  });

  it("holds a job's attempt the log cannot record, spending no attempt, and records it once the log answers", async () => {
    let runs = 0;
    svc = await startService({ JOB_BACKOFF_MS: "50" }, [
      {
        "review.created": () => {
          runs++;
        },
      },
    ]);
    const worker = svc.service.worker!.eventWorker;
    // The log's table is away (a real database error, not a stub) while the attempt ends.
    await sql`alter table events rename to events_away`.execute(svc.database.db);
    const completed = nextJob(worker, "completed");
    // The events queue's path (a retry, a replay, a change event): the same runner as the stream's.
    const event = review("rev_unrecorded");
    await svc.service.eventsQueue.add(
      event.type,
      { id: event.id, type: event.type, receivedAt: new Date().toISOString(), payload: event },
      { attempts: 10, backoff: { type: "fixed", delay: 50 } },
    );
    // The attempt holds its job (active, unfailed, no attempt spent) while the log is away.
    await waitFor(() => svc!.service.worker!.streamConsumer.waitingOnLog(), { what: "the job's attempt to wait on the log" });
    const [job] = await svc.service.eventsQueue.getActive();
    expect(job?.attemptsMade).toBe(0);
    expect(await svc.service.eventsQueue.getFailedCount()).toBe(0);
    await sql`alter table events_away rename to events`.execute(svc.database.db);
    await completed;
    // Held, not rerun: each handler ran once, and the one record holds every handler's outcome.
    expect(runs).toBe(1);
    const logged = await svc.service.eventLog.get("evt_rev_unrecorded");
    expect(logged).toMatchObject({ status: "handled", attempts: 1 });
    expect(Object.keys(logged!.handlers).sort()).toEqual(["sync:review.created:storeReview", "user:review.created"]);
    expect(Object.values(logged!.handlers).every((h) => h.status === "ok" && h.attempts === 1)).toBe(true);
  });

  it("answers 400 for a mirror filter it cannot apply, and pages the mirror with a cursor", async () => {
    svc = await startService();
    const worker = svc.service.worker!;
    for (const id of ["rev_a", "rev_b", "rev_c"]) {
      const done = nextFinished(worker, "completed", (e) => e.id === `evt_${id}`);
      await svc.deliver(review(id));
      await done;
    }
    const first = (await (await svc.admin("/mirror/reviews?restaurantId=rest_1&limit=2")).json()) as {
      data: { id: string }[];
      nextCursor: string;
    };
    expect(first.data.map((r) => r.id)).toEqual(["rev_a", "rev_b"]);
    const second = (await (await svc.admin(`/mirror/reviews?restaurantId=rest_1&limit=2&cursor=${first.nextCursor}`)).json()) as {
      data: { id: string }[];
      nextCursor: string | null;
    };
    expect(second).toMatchObject({ data: [{ id: "rev_c" }], nextCursor: null });
    for (const query of ["status=NOT_A_STATUS", "from=yesterday", "limit=500", "colour=red"]) {
      const res = await svc.admin(`/mirror/orders?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "invalid_filter" } });
    }
  });

  it("keeps no mirror record in Redis: only queue state, dedup keys, the rate budget and pending ids", async () => {
    svc = await startService();
    const done = nextFinished(svc.service.worker!, "completed");
    await svc.deliver(review("rev_where"));
    await done;
    expect(await svc.service.mirror.get("reviews", "rev_where")).toMatchObject({ rating: 3 });
    const keys = await svc.redis.keys(`${svc.prefix}*`);
    expect(keys.filter((k) => k.includes("mirror"))).toEqual([]);
    for (const key of keys) {
      const type = await svc.redis.type(key);
      const text = type === "string" ? await svc.redis.get(key) : type === "hash" ? JSON.stringify(await svc.redis.hgetall(key)) : "";
      // The job holds the delivered event; a mirror copy would sit in a key of its own.
      if (!key.includes(":events:")) expect(text ?? "", key).not.toContain("rev_where");
    }
  });
});
