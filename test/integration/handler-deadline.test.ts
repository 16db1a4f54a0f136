import { afterEach, describe, expect, it } from "vitest";
import { HandlerTimeoutError } from "../../src/events/errors.js";
import type { EventHandlers } from "../../src/worker/handlers.js";
import { sampleEvent } from "../helpers/edge.js";
import { startService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
const never = () => new Promise<never>(() => undefined);

describe("HANDLER_TIMEOUT_MS", () => {
  it("fails a hung attempt at HANDLER_TIMEOUT_MS with its signal aborted, in the stream and in the queue; the retry succeeds", async () => {
    const hung = sampleEvent({ type: "loyalty.points_awarded" });
    const signals: AbortSignal[] = [];
    const handlers: EventHandlers = {
      "*": async (e, ctx) => {
        // Hangs on its first two attempts: the stream's first attempt and the events queue's first retry.
        if (e.id !== hung.id || ctx.attempt > 2) return;
        signals.push(ctx.signal);
        await never();
      },
    };
    const svc = await startService({ HANDLER_TIMEOUT_MS: "300", JOB_BACKOFF_MS: "50" }, [handlers]);
    cleanups.push(() => svc.stop());
    const others = Array.from({ length: 5 }, () => sampleEvent({ type: "loyalty.points_awarded" }));
    for (const e of [hung, ...others]) expect((await svc.deliver(e)).status).toBe(200);
    const record = await waitFor(
      async () => {
        const r = await svc.service.eventLog.get(hung.id);
        return r?.status === "handled" && r;
      },
      { what: "the hung event to be handled on its third attempt" },
    );
    expect(record.attempts).toBe(3);
    expect(signals).toHaveLength(2);
    for (const s of signals) {
      expect(s.aborted).toBe(true);
      expect(s.reason).toBeInstanceOf(HandlerTimeoutError);
      expect((s.reason as Error).message).toBe("handler timed out after 300 ms");
    }
    for (const e of others) expect(await svc.service.eventLog.get(e.id)).toMatchObject({ status: "handled", attempts: 1 });
  });
});
