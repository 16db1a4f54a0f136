import { afterEach, describe, expect, it } from "vitest";
import type { AnyEvent } from "../../src/events/catalog.js";
import { moduleHandlers } from "../helpers/module-handlers.js";
import { redisKeys } from "../../src/redis/redis.js";
import type { EventHandlers } from "../../src/worker/handlers.js";
import { replayEvents } from "../../src/worker/replays.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextJob, nextFinished } from "../helpers/job-events.js";
import { startService, type TestService } from "../helpers/service.js";
import { streamDrained } from "../helpers/stream-consumer.js";

let svc: TestService | undefined;
afterEach(async () => {
  await svc?.stop();
  svc = undefined;
});

/** What the edge's seen key does when DEDUP_WINDOW_SECONDS ends: it expires. */
const windowEnds = (s: TestService, id: string) => s.redis.del(redisKeys(s.prefix).ingest.seen(id));

describe("a redelivered event id is the same event for as long as the event log holds it", () => {
  it("inside the window the edge drops it; after the window the worker finds it in the log and runs nothing; a replay sends the first copy", async () => {
    const notes: unknown[] = [];
    let failing = true;
    const handlers: EventHandlers = moduleHandlers({
      "guest.visited": (e: AnyEvent) => {
        notes.push((e as { data?: { note?: unknown } }).data?.note);
        if (failing) throw new Error("the loyalty service said no");
      },
    });
    svc = await startService({ JOB_ATTEMPTS: "1" }, [handlers]);
    const first = sampleEvent({ type: "guest.visited", data: { note: "first copy" } });
    const failed = nextFinished(svc.service.worker!, "failed", (e) => e.id === first.id);
    expect((await svc.deliver(first)).status).toBe(200);
    await failed;
    expect(notes).toEqual(["first copy"]);

    // Inside DEDUP_WINDOW_SECONDS: answered as a duplicate at the edge, nothing appended.
    const again = await svc.deliver({ ...first, data: { note: "second copy" } });
    expect(await again.json()).toMatchObject({ duplicate: true });

    // After the window, while the log still holds the event (EVENT_RETENTION_DAYS): accepted, read, and not run.
    await windowEnds(svc, first.id);
    const late = await svc.deliver({ ...first, data: { note: "second copy" } });
    expect(await late.json()).toMatchObject({ duplicate: false });
    await streamDrained(svc.redis, svc.prefix);
    expect(notes).toEqual(["first copy"]);
    // The log still tells the first copy's story: its status, payload and one attempt.
    expect(await svc.service.eventLog.get(first.id)).toMatchObject({
      status: "failed",
      attempts: 1,
      payload: { data: { note: "first copy" } },
    });

    // A replay sends the event the log holds: the first copy.
    failing = false;
    const replayed = nextJob(svc.service.worker!.eventWorker, "completed", (j) => j.data.id === first.id);
    const queue = svc.service.eventsQueue;
    expect(await replayEvents({ eventLog: svc.service.eventLog, queue }, { query: { status: "failed" } })).toBe(1);
    await replayed;
    expect(notes).toEqual(["first copy", "first copy"]);
    expect(await svc.service.eventLog.get(first.id)).toMatchObject({ status: "handled", payload: { data: { note: "first copy" } } });
  });

  it("once the log no longer holds it (pruned), a delivery of the id is a new event", async () => {
    const notes: unknown[] = [];
    svc = await startService({}, [
      moduleHandlers({ "guest.visited": (e: AnyEvent) => void notes.push((e as { data?: { note?: unknown } }).data?.note) }),
    ]);
    const event = sampleEvent({ type: "guest.visited", data: { note: "long ago" } });
    const handled = nextFinished(svc.service.worker!, "completed", (e) => e.id === event.id);
    await svc.deliver(event);
    await handled;
    await svc.service.eventLog.prune(new Date(Date.now() + 60_000));
    await windowEnds(svc, event.id);
    const again = nextFinished(svc.service.worker!, "completed", (e) => e.id === event.id);
    await svc.deliver({ ...event, data: { note: "today" } });
    await again;
    expect(notes).toEqual(["long ago", "today"]);
    expect(await svc.service.eventLog.get(event.id)).toMatchObject({
      status: "handled",
      attempts: 1,
      payload: { data: { note: "today" } },
    });
  });
});
