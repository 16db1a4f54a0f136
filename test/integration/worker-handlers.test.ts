import { mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UnrecoverableError } from "bullmq";
import { afterEach, describe, expect, inject, it } from "vitest";
import type { AnyEvent } from "../../src/events/catalog.js";
import { signPayload } from "../../src/events/envelope.js";
import type { EventHandlers, HandlerContext } from "../../src/worker/handlers.js";
import { HandlersModuleError } from "../../src/worker/errors.js";
import { loadHandlersModule } from "../../src/worker/handlers.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { sampleEvent, TEST_SECRET } from "../helpers/edge.js";
import { nextJob, nextFinished } from "../helpers/job-events.js";
import { startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

let svc: TestService | undefined;
let proc: CliProcess | undefined;
afterEach(async () => {
  await svc?.stop();
  svc = undefined;
  if (proc?.child.exitCode === null) proc.child.kill("SIGKILL");
  proc = undefined;
});

const review = (id = `rev_${Math.random().toString(36).slice(2)}`) =>
  sampleEvent({ type: "review.created", data: { id, restaurantId: "rest_1", rating: 5, comment: "great" } });

describe("worker: handlers", () => {
  it("gives a typed handler the event and a context; '*' gets every event, unknown types included", async () => {
    const seen: { type: string; attempt: number; hasMirror: boolean }[] = [];
    const handlers: EventHandlers = {
      "review.created": (e, ctx: HandlerContext) =>
        void seen.push({ type: `typed:${e.data.id}`, attempt: ctx.attempt, hasMirror: !!ctx.mirror }),
      "*": (e: AnyEvent) => void seen.push({ type: `any:${e.type}`, attempt: 0, hasMirror: true }),
    };
    svc = await startService({}, [handlers]);
    const worker = svc.service.worker!;
    const done = nextFinished(worker, "completed", (e) => e.type === "loyalty.points_awarded");
    const ev = review("rev_typed");
    const reviewDone = nextFinished(worker, "completed", (e) => e.id === ev.id);
    await svc.deliver(ev);
    await svc.deliver(sampleEvent({ type: "loyalty.points_awarded", data: { points: 5 } }));
    await Promise.all([done, reviewDone]);
    expect(seen).toEqual(
      expect.arrayContaining([
        { type: "typed:rev_typed", attempt: 1, hasMirror: true },
        { type: "any:review.created", attempt: 0, hasMirror: true },
        { type: "any:loyalty.points_awarded", attempt: 0, hasMirror: true },
      ]),
    );
    // The built-in review handler stored it as delivered.
    expect(await svc.service.mirror.get("reviews", "rev_typed")).toMatchObject({ rating: 5 });
  });

  it("completes an unknown event type with no handler for it, without retrying", async () => {
    svc = await startService();
    const done = nextFinished(svc.service.worker!, "completed");
    const ev = sampleEvent({ type: "something.new" });
    await svc.deliver(ev);
    expect(await done).toMatchObject({ id: ev.id, via: "stream" }); // one attempt, the first
    expect(await svc.service.eventLog.get(ev.id)).toMatchObject({ status: "handled", attempts: 1, handlers: {} });
  });

  it("retries only the handler that failed; the others ran once", async () => {
    let steady = 0;
    let flaky = 0;
    svc = await startService({ JOB_BACKOFF_MS: "20" }, [
      {
        "review.created": () => {
          steady++;
        },
      },
      {
        "review.created": () => {
          flaky++;
          if (flaky === 1) throw new Error("transient");
        },
      },
    ]);
    const ev = review("rev_retry");
    const retried = nextFinished(svc.service.worker!, "retried", (e) => e.id === ev.id);
    const done = nextFinished(svc.service.worker!, "completed", (e) => e.id === ev.id);
    await svc.deliver(ev);
    // The first attempt ran from the ingest stream; the retry is a job of the events queue.
    expect(await retried).toMatchObject({ via: "stream" });
    expect(await done).toMatchObject({ via: "queue" });
    expect({ steady, flaky }).toEqual({ steady: 1, flaky: 2 });
    expect(await svc.service.eventLog.get(ev.id)).toMatchObject({
      status: "handled",
      attempts: 2,
      handlers: { "user0:review.created": { status: "ok", attempts: 1 }, "user1:review.created": { status: "ok", attempts: 2 } },
    });
    expect(await svc.service.mirror.get("reviews", "rev_retry")).toBeDefined();
  });

  it("does not let a throwing custom handler block the built-in handler", async () => {
    svc = await startService({ JOB_ATTEMPTS: "1" }, [
      {
        "review.created": () => {
          throw new Error("custom bug");
        },
      },
    ]);
    const ev = review("rev_blocked");
    const failed = nextJob(svc.service.worker!.eventWorker, "failed", (j) => j.data.id === ev.id);
    await svc.deliver(ev);
    // Failed for good on its first attempt: placed in the failed set (the dead letter) with its reason.
    expect((await failed).failedReason).toContain("custom bug");
    expect(await svc.service.mirror.get("reviews", "rev_blocked")).toMatchObject({ id: "rev_blocked" });
  });

  it("fails a job for good on a permanent error, and replays it from the CLI", async () => {
    let calls = 0;
    svc = await startService({}, [
      {
        "review.created": () => {
          calls++;
          if (calls === 1) throw new UnrecoverableError("bad data upstream");
        },
      },
    ]);
    const worker = svc.service.worker!.eventWorker;
    const ev = review("rev_replay");
    const failed = nextJob(worker, "failed", (j) => j.data.id === ev.id);
    await svc.deliver(ev);
    const job = await failed;
    expect(job.failedReason).toContain("bad data upstream");
    expect(await svc.service.eventsQueue.getFailedCount()).toBe(1);
    expect(await svc.service.eventLog.get(ev.id)).toMatchObject({ status: "failed", attempts: 1 });

    const completed = nextJob(worker, "completed", (j) => j.data.id === ev.id);
    proc = runCli(["replay", job.id!], { REDIS_URL: inject("redisUrl"), QUEUE_PREFIX: svc.prefix });
    expect((await proc.exited).code).toBe(0);
    await completed;
    expect(calls).toBe(2);
    expect(await svc.service.eventsQueue.getFailedCount()).toBe(0);
    expect(await svc.service.eventLog.get(ev.id)).toMatchObject({ status: "handled", attempts: 2 });
  });
  it("fails an event for good when a handler calls ctx.api on a service with no upstream, naming the call", async () => {
    let calls = 0;
    svc = await startService({ JOB_ATTEMPTS: "3", JOB_BACKOFF_MS: "20" }, [
      {
        "review.created": async (_e, ctx) => {
          calls++;
          await ctx.api.listOrders({ restaurantId: "rest_1" });
        },
      },
    ]);
    const ev = review("rev_no_api");
    const failed = nextJob(svc.service.worker!.eventWorker, "failed", (j) => j.data.id === ev.id);
    await svc.deliver(ev);
    expect((await failed).failedReason).toContain("ApiNotConfiguredError: ctx.api.listOrders: this service has no upstream API");
    // No retry: configuring the API is the fix, then a replay.
    expect(calls).toBe(1);
    expect(await svc.service.eventLog.get(ev.id)).toMatchObject({ status: "failed", attempts: 1 });
  });
});

describe("HANDLERS_MODULE", () => {
  it("loads a module from outside the project that imports nothing from it, and calls it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-handlers-"));
    const out = join(dir, "seen.txt");
    const file = join(dir, "handlers.mjs");
    writeFileSync(
      file,
      `import { appendFileSync } from "node:fs";
export default {
  "order.created": async (event, ctx) => { appendFileSync(${JSON.stringify(out)}, "order " + event.data.id + " attempt " + ctx.attempt + "\\n"); },
  "*": async (event) => { appendFileSync(${JSON.stringify(out)}, "any " + event.type + "\\n"); },
};
`,
    );
    proc = runCli(["serve"], {
      PORT: "0",
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-hm-${process.pid}`,
      SIGNING_SECRET: TEST_SECRET,
      HANDLERS_MODULE: file,
    });
    const url = await proc.listening();
    const body = JSON.stringify(sampleEvent({ data: { id: "ord_mod", restaurantId: "rest_1" } }));
    const res = await fetch(`${url}/webhooks`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, TEST_SECRET) },
    });
    expect(res.status).toBe(200);
    const text = await waitFor(
      () => (existsSync(out) && readFileSync(out, "utf8").split("\n").length > 2 ? readFileSync(out, "utf8") : undefined),
      { what: "the module's handlers to run" },
    );
    expect(text.split("\n").filter(Boolean).sort()).toEqual(["any order.created", "order ord_mod attempt 1"]);
  });

  it("refuses a module whose default export is not a map of functions, naming what is wrong", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-handlers-"));
    const bad = join(dir, "bad.mjs");
    writeFileSync(bad, `export default { "order.created": "not a function" };`);
    await expect(loadHandlersModule(bad)).rejects.toThrow(
      /the handler for "order\.created" from user must be a function or \{ name, handle \}/,
    );
    const none = join(dir, "none.mjs");
    writeFileSync(none, `export const x = 1;`);
    await expect(loadHandlersModule(none)).rejects.toBeInstanceOf(HandlersModuleError);
    await expect(loadHandlersModule(join(dir, "missing.mjs"))).rejects.toThrow(/could not be loaded/);
  });

  it("names the file, line and column of a syntax error in the module", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-handlers-"));
    const broken = join(dir, "broken.mjs");
    writeFileSync(broken, `export default {\n  "order.created": () => {\n    let x = ;\n  },\n};\n`);
    const error = await loadHandlersModule(broken).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(HandlersModuleError);
    expect((error as Error).message).toBe(`HANDLERS_MODULE ${broken}: SyntaxError at line 3, column 13: Unexpected token ';'`);
    // A syntax error in a file the module imports is not the module's own line: the loader's message stands.
    const importer = join(dir, "importer.mjs");
    writeFileSync(importer, `import "./broken.mjs";\nexport default {};\n`);
    await expect(loadHandlersModule(importer)).rejects.toThrow(/^HANDLERS_MODULE .*importer\.mjs could not be loaded: /);
  });
});
