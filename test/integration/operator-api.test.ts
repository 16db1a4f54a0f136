import { Queue } from "bullmq";
import { afterEach, describe, expect, it } from "vitest";
import { SYNC_QUEUE } from "../../src/queue/events-queue.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextJob } from "../helpers/job-events.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";
import type { EventHandlers } from "../../src/worker/handlers.js";
import { moduleHandlers } from "../helpers/module-handlers.js";

let svc: TestService | undefined;
afterEach(async () => {
  await svc?.stop();
  svc = undefined;
});

const TYPE = "guest.visited";
const FIRST = "user0:guest.visited";
const SECOND = "user1:guest.visited";

/** Two handlers of one unknown type (no built-in handler runs), counting their runs per event; `failing` ids fail in the first. */
function countingHandlers(failing: Set<string>) {
  const runs: Record<string, string[]> = { [FIRST]: [], [SECOND]: [] };
  const handlers: EventHandlers[] = [
    moduleHandlers({
      [TYPE]: (event: { id: string }) => {
        runs[FIRST]!.push(event.id);
        if (failing.has(event.id)) throw new Error("guest book unavailable");
      },
    }),
    moduleHandlers({ [TYPE]: (event: { id: string }) => void runs[SECOND]!.push(event.id) }),
  ];
  return { runs, handlers };
}

const post = (path: string, body: unknown = {}, headers: Record<string, string> = {}) =>
  fetch(`${svc!.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

/** Delivers an event and waits until its first attempt is in the log. */
async function delivered(overrides: Record<string, unknown> = {}) {
  const event = sampleEvent({ type: TYPE, data: {}, ...overrides });
  expect((await svc!.deliver(event)).status).toBe(200);
  await waitFor(() => svc!.service.eventLog.get(event.id), { what: `${event.id} in the event log` });
  return event;
}

const failedJobsOf = async (eventId: string) =>
  (await svc!.service.eventsQueue.getFailed(0, -1)).filter((j) => (j.data as { id: string }).id === eventId);

describe("POST /events/{id}/replay", () => {
  it("replays one event by id: a new attempt in the log, every handler run again", async () => {
    const { runs, handlers } = countingHandlers(new Set());
    svc = await startService({}, handlers);
    const event = await delivered();
    await waitFor(async () => (await svc!.service.eventLog.get(event.id))?.status === "handled");

    const res = await post(`/events/${event.id}/replay`);
    expect(res.status).toBe(202);
    const body = (await res.json()) as { event: string; replay: { id: string; handlers: string[] } };
    expect(body).toMatchObject({ event: event.id, replay: { handlers: [FIRST, SECOND] } });
    expect(body.replay.id).toMatch(/^replay-/);
    await waitFor(async () => (await svc!.service.eventLog.get(event.id))?.attempts === 2, { what: "the replay's attempt" });
    expect(runs[FIRST]!.filter((id) => id === event.id)).toHaveLength(2);
    expect(runs[SECOND]!.filter((id) => id === event.id)).toHaveLength(2);
  });

  it("with a handler, runs only that handler", async () => {
    const { runs, handlers } = countingHandlers(new Set());
    svc = await startService({}, handlers);
    const event = await delivered();
    await waitFor(async () => (await svc!.service.eventLog.get(event.id))?.status === "handled");
    const res = await post(`/events/${event.id}/replay`, { handler: SECOND });
    expect(res.status).toBe(202);
    expect(((await res.json()) as { replay: { handlers: string[] } }).replay.handlers).toEqual([SECOND]);
    await waitFor(async () => (await svc!.service.eventLog.get(event.id))?.attempts === 2, { what: "the replay's attempt" });
    expect(runs[SECOND]!.filter((id) => id === event.id)).toHaveLength(2);
    expect(runs[FIRST]!.filter((id) => id === event.id)).toHaveLength(1);
  });

  it("answers 404 for an unknown event and 400 for an unknown handler or a bad body, queuing nothing", async () => {
    svc = await startService({ ROLE: "web" });
    await svc.service.eventLog.recordAttempt({
      id: "evt_known",
      type: TYPE,
      payload: {},
      status: "failed",
      handlers: { [FIRST]: { status: "failed" } },
    });
    const missing = await post("/events/evt_missing/replay");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: "event_not_found" } });
    const unknown = await post("/events/evt_known/replay", { handler: "user:nope:0" });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({ error: { code: "unknown_handler" } });
    const extra = await post("/events/evt_known/replay", { handler: FIRST, force: true });
    expect(extra.status).toBe(400);
    expect(await extra.json()).toMatchObject({ error: { code: "invalid_request" } });
    expect(await svc.service.eventsQueue.getJobCounts("waiting", "delayed", "prioritized")).toEqual({
      waiting: 0,
      delayed: 0,
      prioritized: 0,
    });
  });

  it("settles the event's failed job, so a retry of that dead letter cannot run the handler again", async () => {
    const failing = new Set<string>();
    const { runs, handlers } = countingHandlers(failing);
    svc = await startService({ JOB_ATTEMPTS: "1" }, handlers);
    const event = sampleEvent({ type: TYPE, data: {} });
    failing.add(event.id);
    const deadLetter = nextJob(svc.service.worker!.eventWorker, "failed", (j) => j.data.id === event.id);
    expect((await svc.deliver(event)).status).toBe(200);
    await deadLetter;
    expect(await failedJobsOf(event.id)).toHaveLength(1);

    failing.delete(event.id);
    const handled = nextJob(svc.service.worker!.eventWorker, "completed", (j) => j.data.id === event.id);
    expect((await post(`/events/${event.id}/replay`, { handler: FIRST })).status).toBe(202);
    await handled;
    expect(await failedJobsOf(event.id)).toEqual([]);
    expect((await svc.service.eventLog.get(event.id))?.status).toBe("handled");
    expect(runs[FIRST]!.filter((id) => id === event.id)).toHaveLength(2);
  });

  it("is idempotent: asked twice while the first waits, or twice with one Idempotency-Key, it queues one job", async () => {
    svc = await startService({ ROLE: "web" }); // no worker: the replay stays queued
    await svc.service.eventLog.recordAttempt({
      id: "evt_twice",
      type: TYPE,
      payload: {},
      status: "failed",
      handlers: { [FIRST]: { status: "failed" } },
    });
    const ids = [];
    for (let i = 0; i < 2; i++) ids.push(((await (await post("/events/evt_twice/replay")).json()) as { replay: { id: string } }).replay.id);
    expect(ids[1]).toBe(ids[0]);
    expect(await svc.service.eventsQueue.getWaitingCount()).toBe(1);

    const keyed = [];
    for (let i = 0; i < 2; i++)
      keyed.push(
        (
          (await (await post("/events/evt_twice/replay", { handler: FIRST }, { "idempotency-key": "retry-evt-twice-1" })).json()) as {
            replay: { id: string };
          }
        ).replay.id,
      );
    expect(keyed[1]).toBe(keyed[0]);
    expect(keyed[0]).not.toBe(ids[0]);
    expect(await svc.service.eventsQueue.getWaitingCount()).toBe(2);
  });
});

describe("POST /events/replay (bulk) and GET /events/replays/{id}", () => {
  it("counts in a dry run exactly what it then replays, and its progress reaches done", async () => {
    const failing = new Set<string>();
    const { handlers } = countingHandlers(failing);
    svc = await startService({ JOB_ATTEMPTS: "1" }, handlers);
    const events = [];
    for (let i = 0; i < 3; i++) {
      const event = sampleEvent({ type: TYPE, data: {} });
      failing.add(event.id);
      events.push(event);
    }
    const handledOne = await delivered(); // handled: not matched by status=failed
    for (const event of events) await delivered(event);
    await waitFor(async () => (await svc!.service.eventsQueue.getFailedCount()) === 3, { what: "three dead letters" });
    failing.clear();

    const filter = { type: "guest.*", status: "failed" };
    const dry = await post("/events/replay", { filter, dryRun: true });
    expect(dry.status).toBe(200);
    expect(await dry.json()).toEqual({ count: 3 });
    expect(await svc.service.eventsQueue.getWaitingCount()).toBe(0);

    const res = await post("/events/replay", { filter });
    expect(res.status).toBe(202);
    const bulk = (await res.json()) as { id: string; count: number };
    expect(bulk.count).toBe(3);
    const progress = await waitFor(
      async () => {
        const p = (await (await svc!.admin(`/events/replays/${bulk.id}`)).json()) as { state: string };
        return p.state === "done" && p;
      },
      { what: "the bulk replay to finish" },
    );
    expect(progress).toEqual({ id: bulk.id, total: 3, done: 3, failed: 0, withdrawn: 0, state: "done" });
    for (const event of events) expect((await svc.service.eventLog.get(event.id))?.status).toBe("handled");
    expect((await svc.service.eventLog.get(handledOne.id))?.attempts).toBe(1);
    expect(await svc.service.eventsQueue.getFailedCount()).toBe(0);
  });

  it("refuses a bad filter (the GET /events parser) with 400 and an unknown bulk id with 404", async () => {
    svc = await startService({ ROLE: "web" });
    for (const filter of [{ status: "lost" }, { since: "yesterday" }, { limit: "5" }]) {
      const res = await post("/events/replay", { filter, dryRun: true });
      expect(res.status, JSON.stringify(filter)).toBe(400);
    }
    const missing = await svc.admin("/events/replays/bulk-00000000-0000-0000-0000-000000000000");
    expect(missing.status).toBe(404);
  });

  it("finds events still retrying with status=retrying, in GET /events and in a bulk dry run", async () => {
    svc = await startService({ ROLE: "web" });
    const log = svc.service.eventLog;
    await log.recordAttempt({
      id: "evt_retrying",
      type: TYPE,
      payload: {},
      status: "received",
      handlers: { [FIRST]: { status: "failed", error: "x" } },
    });
    await log.recordAttempt({ id: "evt_done", type: TYPE, payload: {}, status: "handled", handlers: { [FIRST]: { status: "ok" } } });
    const page = (await (await svc.admin("/events?status=retrying")).json()) as { data: { id: string }[] };
    expect(page.data.map((e) => e.id)).toEqual(["evt_retrying"]);
    expect(await (await post("/events/replay", { filter: { status: "retrying" }, dryRun: true })).json()).toEqual({ count: 1 });
  });
});

describe("POST /sync/reconcile and /sync/backfill", () => {
  it("queue one sync job, and a second request while it waits answers the same job", async () => {
    svc = await startService({ ROLE: "web", API_BASE_URL: "http://127.0.0.1:9", API_KEY: "svc_live_operator_api_test" });
    const first = await post("/sync/reconcile");
    expect(first.status).toBe(202);
    const { job } = (await first.json()) as { job: string };
    expect(await (await post("/sync/reconcile")).json()).toEqual({ job, runs: "now" });
    const syncQueue = new Queue(SYNC_QUEUE, { connection: svc.redis, prefix: svc.prefix });
    try {
      const jobs = await syncQueue.getJobs(["waiting", "prioritized", "delayed"]);
      expect(jobs.map((j) => [j.id, j.name])).toEqual([[job, "reconcile-active"]]);
    } finally {
      await syncQueue.close();
    }
    const backfill = await post("/sync/backfill", { kinds: ["orders"] });
    expect(backfill.status).toBe(202);
    const bad = await post("/sync/backfill", { kinds: ["reviews"] });
    expect(bad.status).toBe(400);
  });

  it("answer 409 when no upstream API is configured", async () => {
    svc = await startService({ ROLE: "web" });
    const res = await post("/sync/reconcile");
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ error: { code: "sync_unavailable" } });
  });
});

describe("the operator API's guards and audit", () => {
  it("refuses a cross-origin request (403) and one without the token (401), changing nothing", async () => {
    svc = await startService({ ROLE: "web" });
    await svc.service.eventLog.recordAttempt({ id: "evt_guarded", type: TYPE, payload: {}, status: "failed", handlers: {} });
    const crossSite = await post("/events/evt_guarded/replay", {}, { origin: "https://evil.example", "sec-fetch-site": "cross-site" });
    expect(crossSite.status).toBe(403);
    const anonymous = await fetch(`${svc.url}/events/evt_guarded/replay`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(anonymous.status).toBe(401);
    const anonymousSync = await fetch(`${svc.url}/sync/reconcile`, { method: "POST" });
    expect(anonymousSync.status).toBe(401);
    expect(await svc.service.eventsQueue.getWaitingCount()).toBe(0);
  });

  it("logs every action once at info (who, route, target, count), never the token", async () => {
    svc = await startService({ ROLE: "web" });
    await svc.service.eventLog.recordAttempt({ id: "evt_audited", type: TYPE, payload: {}, status: "failed", handlers: {} });
    expect((await post("/events/evt_audited/replay")).status).toBe(202);
    expect((await post("/events/replay", { filter: { status: "failed" }, dryRun: true })).status).toBe(200);
    const audit = svc.logs.records().filter((r) => r.msg === "operator action");
    expect(audit).toEqual([
      expect.objectContaining({
        level: 30,
        who: "admin",
        route: "POST /events/:id/replay",
        // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- an asymmetric matcher
        target: expect.objectContaining({ event: "evt_audited" }),
        count: 1,
      }),
      expect.objectContaining({ level: 30, who: "admin", route: "POST /events/replay (dry run)", count: 1 }),
    ]);
    expect(svc.logs.text()).not.toContain(ADMIN_TOKEN);
  });
});
