import { afterEach, describe, expect, it } from "vitest";
import type { AnyEvent } from "../../src/events/catalog.js";
import type { EventHandlers } from "../../src/worker/handlers.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextJob } from "../helpers/job-events.js";
import { startService, type TestService } from "../helpers/service.js";

let svc: TestService | undefined;
afterEach(async () => {
  await svc?.stop();
  svc = undefined;
});

describe("an event whose data fails its type's schema", () => {
  it("reaches '*' handlers, dead-letters for its typed handlers, and replays as a real run recorded with its true outcome", async () => {
    const seen: string[] = [];
    const handlers: EventHandlers = {
      "order.created": () => void seen.push("typed"),
      "*": (e: AnyEvent) => void seen.push(`any:${e.type}`),
    };
    svc = await startService({}, [handlers]);
    const worker = svc.service.worker!.eventWorker;
    // An order.created without data.id: its schema refuses it.
    const ev = sampleEvent({ data: { restaurantId: "rest_1" } });
    const placed = nextJob(worker, "failed", (j) => j.data.id === ev.id);
    expect((await svc.deliver(ev)).status).toBe(200);
    const deadLetter = await placed;
    // The catch-all saw it as delivered, as it sees an unknown type; no typed handler ran.
    expect(seen).toEqual(["any:order.created"]);
    const logged = await svc.service.eventLog.get(ev.id);
    expect(logged).toMatchObject({ status: "failed", attempts: 1, handlers: { "user:*": { status: "ok" } } });
    expect(logged?.handlers["user:order.created"]).toMatchObject({
      status: "failed",
      error: expect.stringContaining("EventDataError") as unknown,
    });

    // `replay <jobId>` retries the dead letter: its typed handlers run (and fail) again, the '*' one is done.
    const settled = Promise.race([
      nextJob(worker, "failed", (j) => j.data.id === ev.id).then(() => "failed"),
      nextJob(worker, "completed", (j) => j.data.id === ev.id).then(() => "completed"),
    ]);
    await deadLetter.retry("failed");
    // Before, the dead letter carried `only: []`: its replay ran nothing and was recorded handled.
    expect(await settled).toBe("failed");
    expect(await svc.service.eventLog.get(ev.id)).toMatchObject({
      status: "failed",
      attempts: 2,
      handlers: { "user:order.created": { status: "failed", attempts: 2 }, "user:*": { status: "ok", attempts: 1 } },
    });
  });
});
