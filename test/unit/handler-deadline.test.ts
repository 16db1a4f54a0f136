import { describe, expect, it } from "vitest";
import { createHandlerRegistry, dispatchEvent, startHandlerDeadline } from "../../src/events/dispatch.js";
import { HandlerTimeoutError } from "../../src/events/errors.js";

describe("the handler deadline", () => {
  it("fails a handler still running when the signal aborts, without waiting for it, and keeps the others' outcomes", async () => {
    const registry = createHandlerRegistry<object>();
    registry.use({ "*": () => new Promise(() => undefined) }, "hung");
    registry.use({ "*": () => undefined }, "quick");
    const controller = new AbortController();
    const dispatched = dispatchEvent(registry, { id: "e", type: "loyalty.points_awarded" }, {}, new Set(), undefined, controller.signal);
    await new Promise((resolve) => setImmediate(resolve)); // the quick one has ended
    controller.abort(new HandlerTimeoutError(50));
    const result = await dispatched;
    expect(result.succeeded).toEqual(["quick:*"]);
    expect(result.failures).toHaveLength(1);
    expect(result.failures[0]!.error).toBeInstanceOf(HandlerTimeoutError);
    expect(String(result.failures[0]!.error)).toBe("HandlerTimeoutError: handler timed out after 50 ms");
  });

  it("aborts its signal with a HandlerTimeoutError once the time passes, and never with 0", async () => {
    const deadline = startHandlerDeadline(10);
    await new Promise<void>((resolve) => deadline.signal.addEventListener("abort", () => resolve()));
    expect(deadline.signal.reason).toEqual(new HandlerTimeoutError(10));
    const none = startHandlerDeadline(0);
    none.clear();
    expect(none.signal.aborted).toBe(false);
  });
});
