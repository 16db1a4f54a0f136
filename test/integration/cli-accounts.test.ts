import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { sampleEvent } from "../helpers/edge.js";
import { startService, type TestService } from "../helpers/service.js";
import { cli } from "../helpers/cli-main.js";
import { waitFor } from "../helpers/wait-for.js";
import { createSandboxCompanies } from "../../src/sandbox/companies.js";

const SECRETS_KEY = randomBytes(32).toString("base64");
const KEY = "svc_live_cli_account_key_0123";
const SECRET = "whsec_cli_account_secret_0123";

describe("svc-webhooks accounts, on the embedded database a running service holds", () => {
  let svc: TestService;
  let env: Record<string, string>;
  const deliver = (account: string) => {
    const text = JSON.stringify(sampleEvent({ type: "guest.visited", data: {} }));
    return fetch(`${svc.url}/webhooks/${account}`, {
      method: "POST",
      body: text,
      headers: { "content-type": "application/json", "x-svc-signature": signPayload(text, SECRET) },
    });
  };
  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-cli-accounts-"));
    svc = await startService({ SECRETS_KEY }, [], { dataDir });
    env = { DATA_DIR: dataDir, DATABASE_SCHEMA: svc.database.schema, REDIS_URL: inject("redisUrl"), QUEUE_PREFIX: svc.prefix, SECRETS_KEY };
  });
  afterAll(() => svc.stop());

  it("adds, lists, rotates and removes an account; the service serves and stops serving it; no value is printed", async () => {
    const missing = await cli(["accounts", "add", "acme"], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("ACCOUNT_API_KEY and ACCOUNT_SIGNING_SECRET");
    const keyless = await cli(["accounts", "add", "acme"], {
      ...env,
      SECRETS_KEY: "",
      ACCOUNT_API_KEY: KEY,
      ACCOUNT_SIGNING_SECRET: SECRET,
    });
    expect(keyless.code).toBe(1);
    expect(keyless.stderr.trim().split("\n")).toHaveLength(1);
    expect(keyless.stderr).toContain("SECRETS_KEY is not set");

    const added = await cli(["accounts", "add", "acme"], { ...env, ACCOUNT_API_KEY: KEY, ACCOUNT_SIGNING_SECRET: SECRET });
    expect(added, added.stderr).toMatchObject({ code: 0, stdout: "account acme added: its webhooks go to POST /webhooks/acme" });
    // The running service reads the registry again within a poll.
    await waitFor(async () => (await deliver("acme")).status === 200, { what: "acme served" });
    // One of its events replayed from the CLI, named by its account.
    const acmeEvents = async () => ((await (await svc.admin("/events?account=acme")).json()) as { data: { id: string }[] }).data;
    await waitFor(async () => (await acmeEvents()).length > 0, { what: "acme's event logged" });
    const id = (await acmeEvents())[0]?.id ?? "";
    expect((await cli(["replay", "--id", id], env)).stderr).toContain("event_not_found");
    const replayed = await cli(["replay", "--id", id, "--account", "acme", "--json"], env);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(JSON.parse(replayed.stdout)).toMatchObject({ event: id });
    // By filter: acme's part of the log, not the default company's.
    const counted = await cli(["replay", "--since", "2000-01-01", "--account", "acme", "--dry-run", "--json"], env);
    expect(counted.code, counted.stderr).toBe(0);
    expect(JSON.parse(counted.stdout)).toMatchObject({ wouldQueue: (await acmeEvents()).length });
    expect((await cli(["replay", "all", "--account", "acme"], env)).stderr).toContain("--account goes with --id, a filter or list");

    const listed = await cli(["accounts", "list", "--json"], env);
    expect(JSON.parse(listed.stdout)).toMatchObject({ data: [{ id: "acme", signingSecrets: 1, sync: { state: "importing" } }] });
    // No upstream here: its first import never began, and the line says what is still to read.
    expect((await cli(["accounts", "list"], env)).stdout).toMatch(
      /^1 account besides default\nacme: importing \(orders 0 read, bookings 0 read, menu-items 0 read\); 1 signing secret, since /,
    );
    const rotated = await cli(["accounts", "rotate", "acme"], { ...env, ACCOUNT_SIGNING_SECRET: "whsec_cli_account_next_01234" });
    expect(rotated.stdout).toBe("account acme rotated: 2 signing secrets verify its webhooks");
    const bad = await cli(["accounts", "add", "Acme Corp"], { ...env, ACCOUNT_API_KEY: KEY, ACCOUNT_SIGNING_SECRET: SECRET });
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim()).toMatch(/^svc-webhooks: id must be a slug[^\n]*$/);

    const removed = await cli(["accounts", "remove", "acme", "--purge"], env);
    expect(removed.stdout).toBe("account acme removed, with its rows, events and steps");
    await waitFor(async () => (await deliver("acme")).status === 404, { what: "acme no longer served" });
    for (const r of [added, listed, rotated, removed]) expect(r.stdout + r.stderr).not.toMatch(/svc_live_cli|whsec_cli/);
  });
});

describe("svc-webhooks backfill --account, run by the command itself", () => {
  it("reads a registered account's company with its key into its mirror, and says what it needs without SECRETS_KEY", async () => {
    const keys = [`svc_live_${randomBytes(16).toString("hex")}`, `svc_live_${randomBytes(16).toString("hex")}`];
    const companies = createSandboxCompanies(keys.map((key) => ({ apiKeys: [key], history: { orders: 250, days: 30 } })));
    const url = await companies.listen();
    try {
      const dataDir = mkdtempSync(join(tmpdir(), "svc-cli-backfill-"));
      const env = {
        DATA_DIR: dataDir,
        REDIS_URL: inject("redisUrl"),
        QUEUE_PREFIX: `test-cli-bf-${randomBytes(4).toString("hex")}`,
        SECRETS_KEY,
        API_BASE_URL: url,
        API_KEY: keys[0] ?? "",
      };
      const added = await cli(["accounts", "add", "acme"], { ...env, ACCOUNT_API_KEY: keys[1] ?? "", ACCOUNT_SIGNING_SECRET: SECRET });
      expect(added.code, added.stderr).toBe(0);
      const keyless = await cli(["backfill", "--account", "acme", "--kinds", "orders"], { ...env, SECRETS_KEY: "" });
      expect(keyless.code).toBe(2);
      expect(keyless.stderr.trim()).toMatch(/^svc-webhooks: backfill --account reads acme's key from the registry: set SECRETS_KEY[^\n]*$/);
      const swept = await cli(["backfill", "--account", "acme", "--kinds", "orders", "--json"], env);
      expect(swept.code, swept.stderr).toBe(0);
      expect(JSON.parse(swept.stdout)).toMatchObject({ backfilled: { orders: 250 }, state: "complete" });
      // Only acme's company was read (the sandbox routes each key to its own company).
      expect(companies.companies[1]?.requestLog.length).toBeGreaterThan(0);
      expect(companies.companies[0]?.requestLog).toEqual([]);
      const listed = await cli(["accounts", "list", "--json"], env);
      expect(JSON.parse(listed.stdout)).toMatchObject({
        data: [{ id: "acme", sync: { kinds: { orders: { records: 250, walked: true } } } }],
      });
    } finally {
      await companies.close();
    }
  }, 120_000);
});
