import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { ServerBusyError } from "../../src/http/errors.js";
import { createBodyBudget } from "../../src/http/body-budget.js";
import { readRawBody } from "../../src/http/raw-body.js";
import { waitFor } from "../helpers/wait-for.js";

describe("createBodyBudget", () => {
  it("refuses a take that would go over, counting nothing for it, and frees on close", () => {
    const budget = createBodyBudget({ maxBytes: 10 });
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
    const budget = createBodyBudget({ maxBytes: 10 });
    const app = new Hono();
    app.post("/", async (c) => {
      const reservation = budget.open();
      try {
        return c.json({ bytes: (await readRawBody(c, { maxBytes: 10, reservation })).byteLength });
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

describe("a source's share of the body budget", () => {
  it("refuses a take past any one of the request's sources' share, while other sources still have room", () => {
    const budget = createBodyBudget({ maxBytes: 100, sourceShare: 0.25 });
    expect(budget.perSource).toBe(25);
    const a = budget.open(["path:acme", "addr:10.0.0.1"]);
    a.take(20);
    // The same path from another address, and another path from the same address: each over a share.
    expect(() => budget.open(["path:acme", "addr:10.0.0.2"]).take(6)).toThrow(ServerBusyError);
    expect(() => budget.open(["path:beta", "addr:10.0.0.1"]).take(6)).toThrow(ServerBusyError);
    const b = budget.open(["path:beta", "addr:10.0.0.2"]);
    b.take(25);
    expect(budget.inUse).toBe(45);
    a.close();
    expect(budget.heldBy("path:acme")).toBe(0);
    budget.open(["path:acme", "addr:10.0.0.1"]).take(25);
    expect(budget.heldBy("addr:10.0.0.2")).toBe(25);
  });

  it("always lets a source hold one body of the largest size, and never more than the whole budget", () => {
    expect(createBodyBudget({ maxBytes: 100, sourceShare: 0.25, minSourceBytes: 40 }).perSource).toBe(40);
    expect(createBodyBudget({ maxBytes: 100, sourceShare: 0.25, minSourceBytes: 400 }).perSource).toBe(100);
    expect(createBodyBudget({ maxBytes: 100 }).perSource).toBe(100);
  });
});
