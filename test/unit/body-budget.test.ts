import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { ServerBusyError } from "../../src/http/errors.js";
import { createBodyBudget, readRawBody } from "../../src/http/webhook-route.js";
import { waitFor } from "../helpers/wait-for.js";

describe("createBodyBudget", () => {
  it("refuses a take that would go over, counting nothing for it, and frees on close", () => {
    const budget = createBodyBudget(10);
    const a = budget.open();
    a.take(8);
    const b = budget.open();
    expect(() => b.take(3)).toThrow(ServerBusyError);
    expect(budget.inUse).toBe(8);
    b.take(2);
    a.close();
    a.close();
    expect(budget.inUse).toBe(2);
    b.close();
    expect(budget.inUse).toBe(0);
  });

  it("refuses a body while others hold the budget, in memory through readRawBody", async () => {
    const budget = createBodyBudget(10);
    const app = new Hono();
    app.post("/", async (c) => {
      const reservation = budget.open();
      try {
        return c.json({ bytes: (await readRawBody(c, 10, reservation)).byteLength });
      } catch (err) {
        if (err instanceof ServerBusyError) return c.json({ error: err.code }, 503);
        throw err;
      } finally {
        reservation.close();
      }
    });
    let release!: () => void;
    const held = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new Uint8Array(8));
        release = () => controller.close();
      },
    });
    const slow = app.request("/", { method: "POST", body: held, duplex: "half" });
    await waitFor(() => budget.inUse === 8, { what: "the first body held" });
    const refused = await app.request("/", { method: "POST", body: "12345" });
    expect(refused.status).toBe(503);
    release();
    expect(await (await slow).json()).toEqual({ bytes: 8 });
    expect((await app.request("/", { method: "POST", body: "12345" })).status).toBe(200);
  });
});
