import type { Job } from "bullmq";
import { afterEach, describe, expect, it } from "vitest";
import type { EventJobData } from "../../src/queue/event-job.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextJob } from "../helpers/job-events.js";
import { startService, type TestService } from "../helpers/service.js";
import { moduleHandlers } from "../helpers/module-handlers.js";

let svc: TestService | undefined;
afterEach(async () => {
  await svc?.stop();
  svc = undefined;
});

// The user's code: its frame (this file) is what the event log and the dashboard must point at.
function chargeLoyaltyPoints(): never {
  throw new TypeError("points service said no");
}
const handlers = moduleHandlers({ "guest.visited": () => chargeLoyaltyPoints() });
const THIS_FILE = "handler-stacks.test.ts";

async function failOnce(env: Record<string, string>): Promise<{ job: Job<EventJobData>; id: string }> {
  svc = await startService(env, [handlers]);
  const ev = sampleEvent({ type: "guest.visited", data: {} });
  const failed = nextJob(svc.service.worker!.eventWorker, "failed", (j) => j.data.id === ev.id);
  expect((await svc.deliver(ev)).status).toBe(200);
  return { job: await failed, id: ev.id };
}

describe("a failing handler's stack", () => {
  it.each([
    ["failed for good on its first attempt (a dead letter)", { JOB_ATTEMPTS: "1" }],
    ["failed for good on a retry from the events queue", { JOB_ATTEMPTS: "2", JOB_BACKOFF_MS: "20" }],
  ])("is kept in the event log and in the job's stacktrace when %s", async (_when, env) => {
    const { job, id } = await failOnce(env);
    expect(job.failedReason).toContain("TypeError: points service said no");
    // BullMQ's job.stacktrace (the dashboard's "stacktrace" tab): the handler's frames, not the worker's throw.
    const trace = (job.stacktrace ?? []).join("\n");
    expect(trace).toContain("chargeLoyaltyPoints");
    expect(trace).toContain(THIS_FILE);
    const logged = await svc!.service.eventLog.get(id);
    const outcomes = Object.values(logged?.handlers ?? {});
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]).toMatchObject({ status: "failed", error: "TypeError: points service said no" });
    expect(outcomes[0]?.stack).toMatch(/^TypeError: points service said no\n\s+at chargeLoyaltyPoints /);
    expect(outcomes[0]?.stack).toContain(THIS_FILE);
  });
});
