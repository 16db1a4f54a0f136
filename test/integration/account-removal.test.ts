import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { AnyEvent } from "../../src/events/catalog.js";
import { readStreamBacklog } from "../../src/queue/ingest-stream.js";
import { createSandboxCompanies, type SandboxCompanies } from "../../src/sandbox/companies.js";
import type { HandlerContext } from "../../src/worker/handlers.js";
import { sampleEvent } from "../helpers/edge.js";
import { reviewRecord } from "../helpers/mirror-records.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

// Removing an account, with or without purge, while its events are in flight, and adding the id
// again (issue 55, items 3, 5 and 6): nothing of the removed registration runs, is recorded or is
// stored after the removal, and the id added again starts clean, for the same company or another.

const KEYS = [0, 1, 2].map(() => `svc_live_${randomBytes(16).toString("hex")}`);
const SECRET = "whsec_removal_secret_0123456789";
const OTHER_SECRET = "whsec_removal_other_secret_0123";

let companies: SandboxCompanies;
let svc: TestService;
/** Every run of a handler, by account and event id. */
const runs: { account: string; id: string; type: string }[] = [];
/** A gate per slow event: its handler waits until the test opens it. */
const gates = new Map<string, { opened: Promise<void>; open: () => void; started: boolean }>();
/** What the slow handler's calls after its gate answered, by event id. */
const after = new Map<string, { listed?: string[]; listError?: string; writeError?: string }>();

const call = (method: string, path: string, body?: unknown) =>
  fetch(`${svc.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
const gate = (id: string) => {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const g = { opened, open, started: false };
  gates.set(id, g);
  return g;
};
const rows = async (table: string, account: string) =>
  Number(
    (await sql<{ n: string }>`select count(*)::text as n from ${sql.table(table)} where account_id = ${account}`.execute(svc.database.db))
      .rows[0]?.n,
  );
/** Every entry of the ingest stream finished and no event job left: what was in flight has ended. */
const settled = async () => {
  const backlog = await readStreamBacklog(svc.redis, svc.prefix);
  const counts = await svc.service.eventsQueue.getJobCounts("waiting", "active", "delayed", "prioritized");
  return backlog.length === 0 && Object.values(counts).every((n) => n === 0);
};

/** A slow handler: waits for its gate, then calls the API and writes the mirror as the account it runs for. */
async function slow(e: AnyEvent, ctx: HandlerContext) {
  const g = gates.get(e.id);
  if (!g) return;
  g.started = true;
  await g.opened;
  const seen: { listed?: string[]; listError?: string; writeError?: string } = {};
  try {
    seen.listed = (await ctx.api.listOrders({ restaurantId: "rest_1", limit: 5 })).data.map((o) => o.id);
  } catch (err) {
    seen.listError = (err as Error).message;
  }
  try {
    await ctx.mirror.upsert("reviews", [reviewRecord(`rev_late_${e.id}`)], await ctx.mirror.clock());
  } catch (err) {
    seen.writeError = (err as Error).message;
  }
  after.set(e.id, seen);
}

beforeAll(async () => {
  companies = createSandboxCompanies(KEYS.map((key) => ({ apiKeys: [key], rateLimit: { max: 100_000, windowMs: 60_000 } })));
  const url = await companies.listen();
  svc = await startService(
    {
      API_BASE_URL: url,
      API_KEY: KEYS[0]!,
      SECRETS_KEY: randomBytes(32).toString("base64"),
      // One slot: the events delivered behind a slow one wait for it, still in flight at the removal.
      WORKER_CONCURRENCY: "1",
    },
    [
      {
        "*": async (e, ctx) => {
          runs.push({ account: ctx.account, id: e.id, type: e.type });
          if (e.type === "slow.thing") await slow(e, ctx);
        },
      },
    ],
  );
}, 60_000);
afterAll(async () => {
  for (const g of gates.values()) g.open();
  await svc.stop();
  await companies.close();
});
beforeEach(async () => {
  await call("DELETE", "/accounts/acme?purge=true");
  runs.length = 0;
});

describe("removing an account with its events in flight", () => {
  it("runs, records and stores nothing of a purged account after the purge, the handler that was running included", async () => {
    expect((await call("POST", "/accounts", { id: "acme", apiKey: KEYS[1], signingSecret: SECRET })).status).toBe(201);
    const slowEvent = sampleEvent({ type: "slow.thing", data: {} });
    const g = gate(slowEvent.id);
    expect((await svc.deliverTo("acme", slowEvent, SECRET)).status).toBe(200);
    await waitFor(() => g.started, { what: "the slow handler running" });
    // Behind it, in flight: reviews the built-in handler would store as delivered.
    const reviews = Array.from({ length: 20 }, (_, i) => sampleEvent({ type: "review.created", data: reviewRecord(`rev_${i}`) }));
    for (const review of reviews) expect((await svc.deliverTo("acme", review, SECRET)).status).toBe(200);

    const purged = await call("DELETE", "/accounts/acme?purge=true");
    expect(purged.status).toBe(200);
    g.open();
    await waitFor(() => after.has(slowEvent.id), { what: "the slow handler's calls after the purge" });
    await waitFor(settled, { what: "every entry of the stream finished" });

    // The running handler could neither call the API nor write the mirror as acme any more.
    expect(after.get(slowEvent.id)?.listError).toContain("acme");
    expect(after.get(slowEvent.id)?.writeError).toContain("acme");
    // Nothing of acme was recorded or stored: no event, no attempt, no review.
    for (const table of ["events", "handler_attempts", "reviews", "steps"]) expect(await rows(table, "acme")).toBe(0);
    // The reviews behind the slow event never ran.
    expect(runs.filter((r) => r.type === "review.created")).toEqual([]);
    expect((await call("GET", "/mirror/reviews?account=acme")).status).toBe(200);
    expect(((await (await call("GET", "/mirror/reviews?account=acme")).json()) as { data: unknown[] }).data).toEqual([]);
    // Counted, and logged once for the registration, not once per event.
    const metrics = await (await call("GET", "/metrics")).text();
    expect(Number(/^svc_events_dropped_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(reviews.length);
    expect(svc.logs.records().filter((l) => String(l.msg).startsWith("dropping the events of an account removed"))).toHaveLength(1);
  }, 60_000);

  it("answers a re-added account's event that reuses an id of the purged one as new, and runs it", async () => {
    expect((await call("POST", "/accounts", { id: "acme", apiKey: KEYS[1], signingSecret: SECRET })).status).toBe(201);
    const event = sampleEvent({ type: "guest.visited", data: {} });
    expect(await (await svc.deliverTo("acme", event, SECRET)).json()).toMatchObject({ duplicate: false });
    await waitFor(() => runs.some((r) => r.id === event.id), { what: "the event run" });
    // A redelivery within the window is a duplicate, as ever.
    expect(await (await svc.deliverTo("acme", event, SECRET)).json()).toMatchObject({ duplicate: true });

    expect((await call("DELETE", "/accounts/acme?purge=true")).status).toBe(200);
    expect((await call("POST", "/accounts", { id: "acme", apiKey: KEYS[2], signingSecret: OTHER_SECRET })).status).toBe(201);
    runs.length = 0;
    // The company now at acme sends an event whose id the purged one used: it is new here.
    expect(await (await svc.deliverTo("acme", event, OTHER_SECRET)).json()).toMatchObject({ duplicate: false });
    await waitFor(() => runs.some((r) => r.id === event.id && r.account === "acme"), { what: "the re-added account's event run" });
    // The purge freed the old registration's seen ids too.
    const seen = await svc.redis.keys(`${svc.prefix}:ingest:{ingest}:seen@acme*`);
    expect(seen).toHaveLength(1);
    expect(seen[0]).not.toContain(":seen@acme:");
  }, 60_000);

  it("never runs an event received for acme under the company added at acme after it, nor calls the API with the new key", async () => {
    expect((await call("POST", "/accounts", { id: "acme", apiKey: KEYS[1], signingSecret: SECRET })).status).toBe(201);
    const running = sampleEvent({ type: "slow.thing", data: {} });
    const g = gate(running.id);
    expect((await svc.deliverTo("acme", running, SECRET)).status).toBe(200);
    await waitFor(() => g.started, { what: "the slow handler running" });
    const waiting = sampleEvent({ type: "slow.thing", data: {} });
    gate(waiting.id).open();
    expect((await svc.deliverTo("acme", waiting, SECRET)).status).toBe(200);

    // Removed without purge, and acme added again for another company (another key).
    expect((await call("DELETE", "/accounts/acme")).status).toBe(200);
    expect((await call("POST", "/accounts", { id: "acme", apiKey: KEYS[2], signingSecret: OTHER_SECRET })).status).toBe(201);
    const newCompanyCalls = companies.companies[2]!.requestLog.length;
    g.open();
    await waitFor(() => after.has(running.id), { what: "the running handler's calls" });
    await waitFor(settled, { what: "every entry of the stream finished" });

    // The handler that was running read nothing with the new company's key; the one waiting never ran.
    expect(after.get(running.id)?.listed).toBeUndefined();
    expect(after.get(running.id)?.listError).toContain("acme");
    expect(companies.companies[2]!.requestLog.length).toBe(newCompanyCalls);
    expect(runs.filter((r) => r.id === waiting.id)).toEqual([]);
    // Nothing of the old registration landed under the new one.
    expect(await rows("events", "acme")).toBe(0);
    expect(await rows("reviews", "acme")).toBe(0);
  }, 60_000);
});
