import type { Job } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EventJobData } from "../../src/queue/events-queue.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextJob } from "../helpers/job-events.js";
import { moduleHandlers } from "../helpers/module-handlers.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

// An event whose handler failed every attempt, then replayed: the replay is a run of its own,
// numbered "attempt n of JOB_ATTEMPTS (replay k)" in the log, its rows, ctx.attempt and the
// console, and BullMQ draws every retry's wait from the job's own backoff options.

const ATTEMPTS = 3;
const BACKOFF_MS = 100;

describe("a replay of an event that failed all its attempts", () => {
  let svc: TestService;
  let failing = true;
  const seen: number[] = [];
  beforeAll(async () => {
    svc = await startService({ JOB_ATTEMPTS: String(ATTEMPTS), JOB_BACKOFF_MS: String(BACKOFF_MS) }, [
      moduleHandlers({
        "guest.arrived": (_event, ctx) => {
          seen.push(ctx.attempt);
          if (failing) throw new Error("table not ready");
        },
      }),
    ]);
  });
  afterAll(() => svc.stop());

  it("leaves BullMQ's backoff options as configured and retries after the wait BullMQ's exponential backoff draws", async () => {
    const worker = svc.service.worker!.eventWorker;
    const event = sampleEvent({ type: "guest.arrived", data: {} });
    const ofEvent = (job: Job<EventJobData>) => job.data.id === event.id;
    // The events queue's first run of the event is its second attempt: it fails and is retried.
    const retried = nextJob(worker, "failed", ofEvent);
    expect((await svc.deliver(event)).status).toBe(200);
    const job = await retried;
    // The job's options are what the queue gave it: nothing rewrites them before the throw.
    expect(job.opts.backoff).toMatchObject({ delay: BACKOFF_MS, jitter: 0.5 });
    // BullMQ's exponential backoff with jitter 0.5 after attempt 2 of the event: 2 × base, down to half of it.
    const longest = 2 ** (2 - 1) * BACKOFF_MS;
    expect(job.delay).toBeGreaterThanOrEqual(Math.floor(longest * 0.5));
    expect(job.delay).toBeLessThanOrEqual(longest);
    await waitFor(async () => (await svc.service.eventLog.get(event.id))?.status === "failed", { what: "the event failed for good" });
    // One line per failed attempt, numbered in the run (BullMQ counts only the job's); the last, given up, an error.
    const lines = svc.logs.records().filter((r) => r.eventId === event.id && String(r.msg).startsWith("event failed"));
    expect(lines.map((r) => [r.attempt, r.level, r.msg])).toEqual([
      [1, 40, "event failed, will retry"],
      [2, 40, "event failed, will retry"],
      [3, 50, "event failed for good: a dead letter, it waits for a replay"],
    ]);
    expect(svc.logs.records().filter((r) => r.msg === "job failed, will retry" && r.jobId === job.id)).toEqual([]);
    const rows = await svc.service.eventLog.handlerAttempts(event.id);
    expect(rows.map((r) => [r.attempt, r.of])).toEqual([
      [1, ATTEMPTS],
      [2, ATTEMPTS],
      [3, ATTEMPTS],
    ]);
    // The row of attempt 2 names the time BullMQ scheduled attempt 3 for.
    const second = rows[1]!;
    expect(second.nextRetryAt!.getTime() - job.delay).toBeGreaterThanOrEqual(second.startedAt.getTime());
    expect(second.nextRetryAt!.getTime() - job.delay).toBeLessThanOrEqual(job.finishedOn ?? Date.now());
  });

  it("counts the replay as attempt 1 of JOB_ATTEMPTS of replay 1, in the rows, ctx.attempt and the console", async () => {
    const [event] = (await svc.service.eventLog.query({ type: "guest.arrived" })).data;
    failing = false;
    const replay = await fetch(`${svc.url}/events/${event!.id}/replay`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(replay.status).toBe(202);
    await waitFor(async () => (await svc.service.eventLog.get(event!.id))?.status === "handled", { what: "the replay handled" });
    const rows = await svc.service.eventLog.handlerAttempts(event!.id);
    expect(rows.map((r) => [r.replay, r.attempt, r.of, r.outcome])).toEqual([
      [0, 1, ATTEMPTS, "failed"],
      [0, 2, ATTEMPTS, "failed"],
      [0, 3, ATTEMPTS, "failed"],
      [1, 1, ATTEMPTS, "ok"],
    ]);
    expect(seen).toEqual([1, 2, 3, 1]);
    const shown = (await (await svc.admin(`/events/${event!.id}`)).json()) as {
      handlerAttempts: { attempt: number; of: number; replay: number }[];
    };
    expect(shown.handlerAttempts.at(-1)).toMatchObject({ attempt: 1, of: ATTEMPTS, replay: 1 });
    const page = await (await svc.admin(`/console/events/${encodeURIComponent(event!.id)}`)).text();
    expect(page).not.toContain(`4 of ${2 * ATTEMPTS}`);
    expect(page).toMatch(/1 of 3\s*(<!-- -->)?\s*\(replay 1\)/);
  });
});
