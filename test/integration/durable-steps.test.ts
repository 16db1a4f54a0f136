import { afterEach, describe, expect, inject, it } from "vitest";
import type { AnyEvent } from "../../src/events/catalog.js";
import type { CreateBookingInput } from "../../src/upstream/models.js";
import type { EventHandlers, HandlerContext } from "../../src/worker/handlers.js";
import { runCli } from "../helpers/cli-process.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextFinished } from "../helpers/job-events.js";
import { startStack, type Stack } from "../helpers/stack.js";
import { moduleHandlers } from "../helpers/module-handlers.js";

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

/**
 * A user's handler: creates a booking in a step, then fails on a later line (a notification
 * that is down) on its first two attempts. `codes` gets the confirmCode every attempt saw.
 */
function bookThenNotify(restaurantId: () => string, codes: string[]): EventHandlers {
  return moduleHandlers({
    "guest.arrived": async (event: AnyEvent, ctx: HandlerContext) => {
      const input: CreateBookingInput = {
        restaurantId: restaurantId(),
        date: "2026-12-24",
        time: "19:30",
        partySize: 4,
        diner: { name: "Ada Lovelace", email: `${event.id}@example.com` },
      };
      const booking = await ctx.step("create booking", () => ctx.api.createBooking(input));
      codes.push(booking.confirmCode);
      if (ctx.attempt < 3) throw new Error(`notification service down (attempt ${ctx.attempt})`);
    },
  });
}

async function startBookingStack(codes: string[]) {
  let restaurant = "";
  const started = await startStack({
    deliver: false,
    env: { JOB_ATTEMPTS: "5", JOB_BACKOFF_MS: "20" },
    handlers: [bookThenNotify(() => restaurant, codes)],
  });
  restaurant = started.sandbox.state.restaurants()[0]!.id;
  return started;
}

const bookingsOf = (s: Stack, eventId: string) => s.sandbox.state.bookings().filter((b) => b.diner.email === `${eventId}@example.com`);

describe("durable steps: ctx.step", () => {
  it("creates one booking when the handler fails twice after the step; every attempt sees the same booking", async () => {
    const codes: string[] = [];
    stack = await startBookingStack(codes);
    const { svc } = stack;
    const ev = sampleEvent({ type: "guest.arrived", data: { id: "guest_1", restaurantId: "rest_1" } });
    const worker = svc.service.worker!;
    // Completed, or failed for good: whichever comes first (a handler whose step throws fails).
    const settled = Promise.race([
      nextFinished(worker, "completed", (e) => e.id === ev.id),
      nextFinished(worker, "failed", (e) => e.id === ev.id),
    ]);
    expect((await svc.deliver(ev)).status).toBe(200);
    expect(await settled).toMatchObject({ outcome: "completed" });

    const bookings = bookingsOf(stack, ev.id);
    expect(bookings).toHaveLength(1);
    expect(codes).toEqual([bookings[0]!.confirmCode, bookings[0]!.confirmCode, bookings[0]!.confirmCode]);
    // The event page shows the step: done once, with its size and duration.
    const page = (await (await svc.admin(`/events/${ev.id}`)).json()) as { attempts: number; steps: Record<string, unknown>[] };
    expect(page.attempts).toBe(3);
    expect(page.steps).toEqual([
      expect.objectContaining({ handler: "user:guest.arrived", name: "create booking", status: "done", runs: 1, attempt: 1 }),
    ]);
    expect(page.steps[0]!.resultBytes).toBeGreaterThan(0);
    expect(page.steps[0]!.durationMs).toEqual(expect.any(Number));
  });

  it("a step rerun after its write threw finds the order already moved or refunded and does not send again", async () => {
    let pendingId = "";
    let paidId = "";
    // Each step's write reaches the API, then the step throws (an answer lost to a timeout), once.
    const lostAnswer = (attempt: number, when: number) => {
      if (attempt === when) throw new Error(`the answer was lost (attempt ${attempt})`);
    };
    stack = await startStack({
      deliver: false,
      env: { JOB_ATTEMPTS: "5", JOB_BACKOFF_MS: "20" },
      handlers: [
        moduleHandlers({
          "guest.left": async (_event: AnyEvent, ctx: HandlerContext) => {
            await ctx.step("confirm order", async () => {
              const order = await ctx.api.updateOrderStatus(pendingId, "CONFIRMED");
              lostAnswer(ctx.attempt, 1);
              return order.status;
            });
            await ctx.step("refund order", async () => {
              const order = await ctx.api.refundOrder(paidId, "guest left");
              lostAnswer(ctx.attempt, 2);
              return order.status;
            });
          },
        }),
      ],
    });
    const { sandbox, svc } = stack;
    const orders = sandbox.state.orders();
    pendingId = orders.find((o) => o.status === "PENDING")!.id;
    paidId = orders.find((o) => o.paidAt !== null && o.status !== "REFUNDED" && o.id !== pendingId)!.id;
    const ev = sampleEvent({ type: "guest.left", data: { id: "guest_3", restaurantId: "rest_1" } });
    const settled = Promise.race([
      nextFinished(svc.service.worker!, "completed", (e) => e.id === ev.id),
      nextFinished(svc.service.worker!, "failed", (e) => e.id === ev.id),
    ]);
    await svc.deliver(ev);
    expect(await settled).toMatchObject({ outcome: "completed" });
    const writes = sandbox.requestLog.filter((r) => r.method !== "GET").map((r) => `${r.method} ${r.path} ${r.status}`);
    expect(writes).toEqual([`PATCH /api/v1/orders/${pendingId}/status 200`, `POST /api/v1/orders/${paidId}/refund 200`]);
    const steps = (await (await svc.admin(`/events/${ev.id}`)).json()) as { steps: { name: string; status: string; runs: number }[] };
    expect(steps.steps.map(({ name, status, runs }) => ({ name, status, runs }))).toEqual([
      { name: "confirm order", status: "done", runs: 2 },
      { name: "refund order", status: "done", runs: 2 },
    ]);
  });

  const databaseUrl = inject("databaseUrl");
  // The CLI is its own process: it shares the service's database only on a PostgreSQL server.
  it.skipIf(!databaseUrl)(
    "a replay gets the stored booking back; replay --fresh creates one more",
    async () => {
      const codes: string[] = [];
      stack = await startBookingStack(codes);
      const { svc } = stack;
      const worker = svc.service.worker!;
      const ev = sampleEvent({ type: "guest.arrived", data: { id: "guest_2", restaurantId: "rest_1" } });
      const first = nextFinished(worker, "completed", (e) => e.id === ev.id);
      await svc.deliver(ev);
      await first;
      const [original] = bookingsOf(stack, ev.id);

      const cliEnv = {
        REDIS_URL: inject("redisUrl"),
        QUEUE_PREFIX: svc.prefix,
        DATABASE_URL: databaseUrl,
        DATABASE_SCHEMA: svc.database.schema,
      };
      const replay = async (...flags: string[]) => {
        const replayed = nextFinished(worker, "completed", (e) => e.id === ev.id && e.via === "queue");
        const cli = runCli(["replay", "--type", "guest.arrived", "--json", ...flags], cliEnv);
        expect((await cli.exited).code, cli.stderr()).toBe(0);
        expect(JSON.parse(cli.stdout().trim().split("\n").pop()!)).toEqual({ queued: 1 });
        await replayed;
      };

      codes.length = 0;
      await replay();
      expect(bookingsOf(stack, ev.id)).toEqual([original]);
      expect(new Set(codes)).toEqual(new Set([original!.confirmCode]));

      codes.length = 0;
      await replay("--fresh");
      const after = bookingsOf(stack, ev.id);
      expect(after).toHaveLength(2);
      const fresh = after.find((b) => b.id !== original!.id)!;
      // The fresh replay's own retries get its new booking back, not a third one.
      expect(new Set(codes)).toEqual(new Set([fresh.confirmCode]));
      // Two CLI processes (each a tsx start) on a machine shared with other suites.
    },
    120_000,
  );

  it("refuses --fresh where it means nothing (replaying failed jobs)", { timeout: 60_000 }, async () => {
    const cli = runCli(["replay", "list", "--fresh"], { REDIS_URL: inject("redisUrl"), QUEUE_PREFIX: "test-fresh-usage" });
    expect((await cli.exited).code).toBe(2);
    expect(cli.stderr().trim()).toBe("svc-webhooks: --fresh applies to replays from the event log (no list, <job-id> or all)");
  });
});
