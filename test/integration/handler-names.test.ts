import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyEvent } from "../../src/events/catalog.js";
import type { EventHandlers, HandlerContext } from "../../src/worker/handlers.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextFinished } from "../helpers/job-events.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { moduleHandlers } from "../helpers/module-handlers.js";

let svc: TestService | undefined;
let database: TestDatabase | undefined;
afterEach(async () => {
  await svc?.stop();
  await database?.close();
  svc = database = undefined;
});

/** A handler that takes one durable step and notes the value the step gave it. */
const stepping = (name: string, runs: Map<string, number>, got: string[]) => ({
  name,
  handle: async (_event: AnyEvent, ctx: HandlerContext) => {
    got.push(
      `${name} got ${await ctx.step("pick", () => Promise.resolve(`${name}#${runs.set(name, (runs.get(name) ?? 0) + 1).get(name)}`))}`,
    );
  },
});

/** Runs the service on the shared database with `handlers` until `run` has settled `eventId` as completed. */
async function runWith(handlers: EventHandlers, eventId: string, run: (s: TestService) => Promise<Response>) {
  svc = await startService({}, [handlers], { database });
  const completed = nextFinished(svc.service.worker!, "completed", (e) => e.id === eventId);
  expect((await run(svc)).status).toBeLessThan(300);
  await completed;
  await svc.stop();
  svc = undefined;
}

const replay = (s: TestService, id: string) =>
  fetch(`${s.url}/events/${id}/replay`, {
    method: "POST",
    body: "{}",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
  });

describe("handler keys follow names, not places", () => {
  it("keeps each handler's step records its own when two handlers of one type swap places between two loads", async () => {
    database = await openTestDatabase(preferredDriver());
    const runs = new Map<string, number>();
    const got: string[] = [];
    const ev = sampleEvent({ type: "guest.arrived", data: { id: "guest_1", restaurantId: "rest_1" } });
    await runWith(moduleHandlers({ "guest.arrived": [stepping("book", runs, got), stepping("notify", runs, got)] }), ev.id, (s) =>
      s.deliver(ev),
    );
    // The module, edited: the same two handlers, the other way round. A replay of the event.
    await runWith(moduleHandlers({ "guest.arrived": [stepping("notify", runs, got), stepping("book", runs, got)] }), ev.id, (s) =>
      replay(s, ev.id),
    );
    expect(got.sort()).toEqual(["book got book#1", "book got book#1", "notify got notify#1", "notify got notify#1"]);
    expect(Object.fromEntries(runs)).toEqual({ book: 1, notify: 1 });
  });

  it("moves step records from a positional key to the handler's name once, at the first start with the module", async () => {
    database = await openTestDatabase(preferredDriver());
    const ev = sampleEvent({ type: "guest.arrived", data: { id: "guest_2", restaurantId: "rest_1" } });
    // What an earlier version stored for the only handler of guest.arrived in HANDLERS_MODULE.
    const oldStep = (eventId: string) =>
      sql`insert into steps (event_id, handler_key, name, status, attempt, result)
          values (${eventId}, 'user:guest.arrived:0', 'pick', 'done', 1, '"stored before the upgrade"'::jsonb)`.execute(database!.db);
    await oldStep(ev.id);
    const got: string[] = [];
    const handlers = moduleHandlers({
      "guest.arrived": async function greet(_event: AnyEvent, ctx: HandlerContext) {
        got.push(await ctx.step("pick", () => Promise.resolve("ran again")));
      },
    });
    await runWith(handlers, ev.id, (s) => s.deliver(ev));
    expect(got).toEqual(["stored before the upgrade"]);
    const keys = await sql<{ handler_key: string }>`select handler_key from steps where event_id = ${ev.id}`.execute(database.db);
    expect(keys.rows).toEqual([{ handler_key: "user:guest.arrived:greet" }]);

    // Once: a row an old worker writes later under the old key is not moved by the next start.
    await oldStep("evt_late");
    await runWith(handlers, ev.id, (s) => replay(s, ev.id));
    const late = await sql<{ handler_key: string }>`select handler_key from steps where event_id = 'evt_late'`.execute(database.db);
    expect(late.rows).toEqual([{ handler_key: "user:guest.arrived:0" }]);
    const renames = await sql`select from_key, to_key, steps from handler_key_renames where from_key like 'user:%'`.execute(database.db);
    expect(renames.rows).toEqual([{ from_key: "user:guest.arrived:0", to_key: "user:guest.arrived:greet", steps: 1 }]);
  });
});
