import { randomBytes } from "node:crypto";
import { QueueEvents } from "bullmq";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import type { ChangeEvent } from "../../src/events/catalog.js";
import { SYNC_QUEUE } from "../../src/queue/events-queue.js";
import { createSandboxCompanies, type SandboxCompanies } from "../../src/sandbox/companies.js";
import type { Sandbox } from "../../src/sandbox/index.js";
import { RECONCILE_JOBS } from "../../src/sync/reconcile-jobs.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { sampleEvent } from "../helpers/edge.js";
import { waitFor } from "../helpers/wait-for.js";

// Two companies behind one sandbox, each with its own key and data (restaurant ids repeat across
// them): the env company (`default`) and a registered account (`acme`). Each one's sync reads its
// own company with its own key into its own mirror, from its first import to its webhooks.

const KEYS = [`svc_live_${randomBytes(16).toString("hex")}`, `svc_live_${randomBytes(16).toString("hex")}`] as const;
const ACME = { id: "acme", apiKey: KEYS[1], signingSecret: "whsec_acme_secret_0123456789" };
const ORDERS = 2500;

let companies: SandboxCompanies;
let svc: TestService;
const changes: ChangeEvent[] = [];
const probes = new Map<string, string[]>();

const company = (index: number): Sandbox => companies.companies[index]!;
const call = (method: string, path: string, body?: unknown) =>
  fetch(`${svc.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
const deliverTo = (account: string, event: object, secret: string) => {
  const text = JSON.stringify(event);
  return fetch(`${svc.url}/webhooks/${account}`, {
    method: "POST",
    body: text,
    headers: { "content-type": "application/json", "x-svc-signature": signPayload(text, secret) },
  });
};
const mirrored = async (account: string) =>
  (await sql<{ id: string }>`select id from orders where account_id = ${account} order by id`.execute(svc.database.db)).rows.map(
    (r) => r.id,
  );
const companyOrders = (index: number) =>
  company(index)
    .state.orders()
    .map((o) => o.id)
    .sort();
beforeAll(async () => {
  // The service's own limiter paces each key (API_RATE); the sandbox's window is out of its way.
  companies = createSandboxCompanies(
    KEYS.map((key) => ({ apiKeys: [key], rateLimit: { max: 100_000, windowMs: 60_000 }, history: { orders: ORDERS, days: 30 } })),
  );
  const url = await companies.listen();
  svc = await startService(
    {
      API_BASE_URL: url,
      API_KEY: KEYS[0],
      API_RATE: "1200",
      SECRETS_KEY: randomBytes(32).toString("base64"),
      RECONCILE_INTERVAL_SECONDS: "3600",
      RECONCILE_ACTIVE_INTERVAL_SECONDS: "0",
    },
    [
      {
        "change.order": (e) => void changes.push(e),
        "*": async (e, ctx) => {
          if (e.type !== "probe.list") return;
          const page = await ctx.api.listOrders({ restaurantId: "rest_1", limit: 5 });
          probes.set(
            e.id,
            page.data.map((o) => o.id),
          );
        },
      },
    ],
  );
  expect((await call("POST", "/accounts", ACME)).status).toBe(201);
}, 60_000);
afterAll(async () => {
  await svc.stop();
  await companies.close();
});

describe("each account's sync", () => {
  it("imports each company into its own mirror with its own key, the same restaurant ids holding each one's rows", async () => {
    // A sync slot per account beside WORKER_CONCURRENCY (10): acme's import never waits for a slot.
    expect(svc.service.worker!.syncWorker.concurrency).toBe(11);
    // The scheduler's tick starts default's first import; acme's starts when a worker sees the new account.
    for (const account of ["default", "acme"])
      await waitFor(async () => (await mirrored(account)).length === ORDERS, { timeoutMs: 90_000, what: `${account}'s first import` });
    const [ofDefault, ofAcme] = [companyOrders(0), companyOrders(1)];
    expect(await mirrored("default")).toEqual(ofDefault);
    expect(await mirrored("acme")).toEqual(ofAcme);
    const [inDefault, inAcme] = [new Set(ofDefault), new Set(ofAcme)];
    expect(ofDefault.filter((id) => inAcme.has(id))).toEqual([]);
    // rest_1 is in both companies, each with its own orders.
    const byRestaurant = await sql<{ account_id: string; n: string }>`
      select account_id, count(*)::text as n from orders where restaurant_id = 'rest_1' group by account_id order by account_id`.execute(
      svc.database.db,
    );
    expect(byRestaurant.rows.map((r) => r.account_id)).toEqual(["acme", "default"]);
    // Each company was read with its own key only (the sandbox routes by key: company 1 saw acme's calls).
    expect(company(1).requestLog.length).toBeGreaterThanOrEqual(ORDERS / 100);
    expect(new Set(company(1).requestLog.map((r) => r.keyHash)).size).toBe(1);
    // Once every kind was walked, GET /accounts says acme is live.
    const listed = async () =>
      ((await (await call("GET", "/accounts")).json()) as { data: { id: string; sync: { state: string } }[] }).data;
    await waitFor(async () => (await listed()).find((a) => a.id === "acme")?.sync.state === "live", { what: "acme live" });
    // Its health: the sync's state, its key's budget (API_RATE here), the ids waiting for a refresh.
    const health = (await (await call("GET", "/accounts/acme")).json()) as Record<string, unknown>;
    expect(health).toMatchObject({
      id: "acme",
      sync: { state: "live", kinds: { orders: { records: ORDERS, walked: true } } },
      budget: { max: 1200, pausedForMs: 0 },
      pendingRefreshes: { orders: 0, bookings: 0, "menu-items": 0 },
    });
    expect(JSON.stringify(health)).not.toContain(ACME.apiKey);
    expect((await call("GET", "/accounts/initech")).status).toBe(404);
    // A first import's change events are `backfill`, and name their account.
    await waitFor(() => changes.some((c) => c.account === "acme"), { what: "acme's change events" });
    const acmeChanges = changes.filter((c) => c.account === "acme");
    expect(acmeChanges.every((c) => c.data.source === "backfill" && inAcme.has(c.data.id))).toBe(true);
    expect(changes.filter((c) => c.account === undefined || c.account === "default").every((c) => inDefault.has(c.data.id))).toBe(true);
  }, 120_000);

  it("refreshes an account's order from its own company when its webhook arrives, and ctx.api calls with its key", async () => {
    await waitFor(async () => (await mirrored("acme")).length === ORDERS, { timeoutMs: 90_000, what: "acme's first import" });
    // Both imports' change events handled first: the one awaited below is not queued behind 5,000 of them.
    await waitFor(() => changes.length >= 2 * ORDERS, { timeoutMs: 90_000, what: "the imports' change events" });
    // A new order at acme's company, its webhook lost: acme's delivery names it.
    const order = company(1).silently(() => company(1).actions.createOrder({ restaurantId: "rest_1" }));
    const event = sampleEvent({ data: { id: order.id, restaurantId: "rest_1" } });
    expect((await deliverTo("acme", event, ACME.signingSecret)).status).toBe(200);
    await waitFor(async () => (await mirrored("acme")).includes(order.id), { what: "acme's order refreshed" });
    expect(await mirrored("default")).not.toContain(order.id);
    const change = await waitFor(() => changes.find((c) => c.data.id === order.id), { what: "its change event" });
    expect(change).toMatchObject({ account: "acme", data: { source: "webhook" } });

    // An operator's "refresh now" of acme's order reads it from acme's company (its webhook lost).
    const moved = company(1).silently(() => company(1).actions.updateOrderStatus(order.id, "CONFIRMED"));
    const refreshed = await call("POST", `/records/orders/${order.id}/refresh?account=acme`);
    expect(refreshed.status).toBe(202);
    await waitFor(
      async () => {
        const row = await sql<{ status: string }>`select status from orders
          where account_id = 'acme' and id = ${order.id}`.execute(svc.database.db);
        return row.rows[0]?.status === moved.status;
      },
      { what: "acme's order refreshed by the operator" },
    );
    // "Reconcile now" for acme; for an account nobody added, or a malformed one, a clear refusal.
    const reconcile = await call("POST", "/sync/reconcile?account=acme");
    expect(reconcile.status).toBe(202);
    expect(((await reconcile.json()) as { job: string }).job).not.toBe("");
    const unknown = await call("POST", "/sync/reconcile?account=initech");
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe("account_not_found");
    expect((await call("POST", "/sync/backfill?account=Not%20A%20Slug")).status).toBe(400);

    // A user's handler calls the API of the account the event came for.
    const probe = sampleEvent({ type: "probe.list", data: {} });
    expect((await deliverTo("acme", probe, ACME.signingSecret)).status).toBe(200);
    const listed = await waitFor(() => probes.get(probe.id), { what: "the probe's listing" });
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.every((id) => companyOrders(1).includes(id))).toBe(true);
  }, 120_000);

  it("stops an account's sync with it: a job of a removed account reads nothing", async () => {
    expect((await call("DELETE", "/accounts/acme")).status).toBe(200);
    expect(svc.service.worker!.syncWorker.concurrency).toBe(10);
    // A job of acme's running at the removal makes no further call: each call asks for the account first.
    const queue = svc.service.worker!.syncQueue;
    await waitFor(async () => (await queue.getActive()).every((j) => (j.data as { account?: string }).account !== "acme"), {
      what: "acme's jobs in flight ended",
    });
    const before = company(1).requestLog.length;
    const events = new QueueEvents(SYNC_QUEUE, { connection: svc.redis, prefix: svc.prefix });
    try {
      await events.waitUntilReady();
      const job = await svc.service.worker!.syncQueue.add(RECONCILE_JOBS.full, { account: "acme", force: true });
      // It runs once a sync slot is free: the other accounts' jobs, waiting for their keys' budgets, may hold them a while on a loaded machine.
      expect(await job.waitUntilFinished(events, 60_000)).toEqual({ skipped: "account acme is not registered" });
    } finally {
      await events.close();
    }
    expect(company(1).requestLog.length).toBe(before);
  }, 120_000);
});
