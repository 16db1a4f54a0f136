import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandboxCompanies, type SandboxCompanies } from "../../src/sandbox/companies.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

// Issue 55, item 9: companies registered one after another, past the sync's account slots (100),
// each get their first import started (a full-tier checkpoint of its own) and read whole, however
// they arrive: 20 orders each, every key on the API's own 120 a minute, as the red team ran it.

const ACCOUNTS = 300;
const KEYS = Array.from({ length: ACCOUNTS + 1 }, () => `svc_live_${randomBytes(16).toString("hex")}`);
const idOf = (i: number) => `co-${String(i).padStart(4, "0")}`;

let companies: SandboxCompanies;
let svc: TestService;

beforeAll(async () => {
  companies = createSandboxCompanies(
    KEYS.map((key, i) => ({
      apiKeys: [key],
      seed: 7000 + i,
      restaurants: 2,
      history: { orders: 20, days: 30, menuItems: 3 },
    })),
  );
  const url = await companies.listen();
  svc = await startService({
    API_BASE_URL: url,
    API_KEY: KEYS[0]!,
    SECRETS_KEY: randomBytes(32).toString("base64"),
    // The tiers as deployed (the test helper turns them off), each key at the API's 120 a minute.
    RECONCILE_INTERVAL_SECONDS: "3600",
    LOG_LEVEL: "info",
  });
}, 120_000);
afterAll(async () => {
  await svc.stop();
  await companies.close();
});

/** Accounts with a full-tier checkpoint: their first import started. */
const started = async () =>
  new Set(
    (
      await sql<{ account_id: string }>`select distinct account_id from sync_checkpoints where tier = 'full' and kind = 'orders'`.execute(
        svc.database.db,
      )
    ).rows.map((r) => r.account_id),
  );

describe("onboarding companies one after another", () => {
  it(`starts the first import of each of ${ACCOUNTS} companies registered one at a time`, async () => {
    for (let i = 1; i <= ACCOUNTS; i++) {
      const res = await fetch(`${svc.url}/accounts`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ id: idOf(i), apiKey: KEYS[i], signingSecret: `whsec_onboarding_${i}_0123456789` }),
      });
      expect(res.status).toBe(201);
    }
    const ids = Array.from({ length: ACCOUNTS }, (_, i) => idOf(i + 1));
    // Waited for whole; on a timeout the assertion below names the accounts left out.
    await waitFor(async () => ids.every((id) => startedNow.has(id)) || ((startedNow = await started()), false), {
      timeoutMs: 240_000,
      intervalMs: 1000,
      what: "every account's first import started",
    }).catch(() => undefined);
    const now = await started();
    expect(ids.filter((id) => !now.has(id))).toEqual([]);
    // And each import reads the company's orders whole.
    const expected = (i: number) => companies.companies[i]!.state.orders().length;
    const imported = async () =>
      new Map(
        (
          await sql<{ account_id: string; n: number }>`select account_id, count(*)::int as n from orders group by account_id`.execute(
            svc.database.db,
          )
        ).rows.map((r) => [r.account_id, r.n]),
      );
    let counts = new Map<string, number>();
    await waitFor(async () => ids.every((id, i) => counts.get(id) === expected(i + 1)) || ((counts = await imported()), false), {
      timeoutMs: 240_000,
      intervalMs: 1000,
      what: "every account's orders imported",
    }).catch(() => undefined);
    expect(ids.filter((id, i) => counts.get(id) !== expected(i + 1))).toEqual([]);
  }, 540_000);
});

let startedNow = new Set<string>();
