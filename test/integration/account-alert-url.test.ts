import { randomBytes, randomUUID } from "node:crypto";
import { sql } from "kysely";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type AccountRegistry, createAccountDirectory, createAccountRegistry, createSecretsBox } from "../../src/mirror/accounts.js";
import type { ProblemTransition } from "../../src/problems/problem.js";
import { receiver, type Receiver } from "../helpers/alert-receiver.js";
import { databaseEnv, openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";
import { cli } from "../helpers/cli-main.js";
import { startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

const KEY = randomBytes(32);
const ACME = { id: "acme", apiKey: "svc_live_acme_key_0123456789", signingSecret: "whsec_acme_secret_0123456789" };
const HOOK = "https://hooks.slack.com/services/T0/B0/acme-t0ken";

describe("an account's alertUrl in the registry", () => {
  let database: TestDatabase;
  let registry: AccountRegistry;
  beforeAll(async () => {
    database = await openTestDatabase(preferredDriver());
    registry = createAccountRegistry(database.db, createSecretsBox(KEY));
  });
  afterAll(() => database.close());
  beforeEach(async () => {
    await sql`truncate accounts`.execute(database.db);
  });

  it("is stored sealed, listed only as set or not, and opened for the directory", async () => {
    expect(await registry.add({ ...ACME, alertUrl: HOOK })).toMatchObject({ id: "acme", alertUrl: true });
    const rows = await sql<{ row: string }>`select accounts::text as row from accounts`.execute(database.db);
    expect(rows.rows[0]?.row).not.toContain("acme-t0ken");
    expect(JSON.stringify(await registry.list())).not.toContain("acme-t0ken");
    expect((await registry.keys()).map(({ incarnation: _incarnation, ...keys }) => keys)).toEqual([
      { id: "acme", apiKey: ACME.apiKey, signingSecrets: [ACME.signingSecret], signatureScheme: "svc", alertUrl: HOOK },
    ]);
    await registry.add({ ...ACME, id: "globex" });
    expect((await registry.list()).map((a) => [a.id, a.alertUrl])).toEqual([
      ["acme", true],
      ["globex", false],
    ]);
  });

  it("refuses a URL that is not http(s) or too long, naming alertUrl and storing nothing", async () => {
    for (const alertUrl of ["ftp://example.com/acme-t0ken", "not a url acme-t0ken", `https://example.com/${"a".repeat(2048)}`, 42]) {
      const err = (await registry.add({ ...ACME, alertUrl }).then(
        () => undefined,
        (e: unknown) => e,
      )) as { code: string; field: string; message: string } | undefined;
      expect(err).toMatchObject({ code: "invalid_account", field: "alertUrl" });
      expect(err?.message).not.toContain("acme-t0ken");
    }
    expect(await registry.list()).toEqual([]);
  });

  it("is set, replaced and removed (null) by a rotation, and the directory follows", async () => {
    await registry.add(ACME);
    const directory = createAccountDirectory(registry, { pollMs: 60_000 });
    await directory.start();
    try {
      expect(directory.get("acme")?.alertUrl).toBeUndefined();
      expect(await registry.rotate("acme", { alertUrl: HOOK })).toMatchObject({ alertUrl: true, signingSecrets: 1 });
      await directory.reload();
      expect(directory.get("acme")?.alertUrl).toBe(HOOK);
      await registry.rotate("acme", { alertUrl: "http://127.0.0.1:9/other" });
      await directory.reload();
      expect(directory.get("acme")?.alertUrl).toBe("http://127.0.0.1:9/other");
      expect(await registry.rotate("acme", { alertUrl: null })).toMatchObject({ alertUrl: false });
      await directory.reload();
      expect(directory.get("acme")?.alertUrl).toBeUndefined();
      await expect(registry.rotate("acme", { alertUrl: "ftp://x" })).rejects.toMatchObject({ field: "alertUrl" });
    } finally {
      directory.close();
    }
  });
});

describe("svc-webhooks accounts add|rotate with ACCOUNT_ALERT_URL", () => {
  it("stores the account's alertUrl from the environment and never prints it", async () => {
    const env = {
      ...databaseEnv(),
      SECRETS_KEY: KEY.toString("base64"),
      ACCOUNT_API_KEY: ACME.apiKey,
      ACCOUNT_SIGNING_SECRET: ACME.signingSecret,
      ACCOUNT_ALERT_URL: HOOK,
    };
    const added = await cli(["accounts", "add", "acme", "--json"], env);
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ id: "acme", alertUrl: true });
    const wrong = await cli(["accounts", "rotate", "acme"], {
      ...env,
      ACCOUNT_API_KEY: "",
      ACCOUNT_SIGNING_SECRET: "",
      ACCOUNT_ALERT_URL: "ftp://x/acme-t0ken",
    });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("alertUrl must be an http:// or https:// URL");
    for (const text of [added.stdout, added.stderr, wrong.stderr]) expect(text).not.toContain("acme-t0ken");
  });
});

describe("the service's announce: the deployment's URL and the account's own, set through POST /accounts", () => {
  const SECRET = `whsec_${randomBytes(32).toString("base64")}`;
  let svc: TestService;
  let deployment: Receiver;
  let acme: Receiver;
  beforeAll(async () => {
    deployment = await receiver("/deployment");
    acme = await receiver("/acme?token=acme-t0ken");
    svc = await startService({ SECRETS_KEY: KEY.toString("base64"), ALERT_WEBHOOK_URL: deployment.url, ALERT_SIGNING_SECRET: SECRET });
  });
  afterAll(async () => {
    await svc.stop();
    await deployment.close();
    await acme.close();
  });

  const transition = (account: string | null): ProblemTransition => ({
    id: `tr_${randomUUID()}`,
    type: "problem.opened",
    problem: {
      id: `prb_${randomUUID()}`,
      account,
      kind: "upstream_unreachable",
      subject: "api.example.com",
      state: "open",
      openedAt: "2026-12-02T04:00:00.000Z",
      resolvedAt: null,
      lastSeenAt: "2026-12-02T04:00:00.000Z",
      count: 1,
      cause: "GET /api/v1/orders failed: ECONNREFUSED (api.example.com)",
    },
  });

  it("sends acme's transitions to acme's alertUrl and every one to ALERT_WEBHOOK_URL, signed", async () => {
    expect((await svc.admin("/accounts", "POST", { ...ACME, alertUrl: acme.url })).status).toBe(201);
    expect(await (await svc.admin("/accounts")).text()).not.toContain("acme-t0ken");
    const ofAcme = transition("acme");
    const ofDeployment = transition(null);
    await svc.service.announce(ofAcme);
    await svc.service.announce(ofDeployment);
    await waitFor(() => deployment.got.length === 2 && acme.got.length === 1, { what: "the notifications at both destinations" });
    expect(acme.got[0]?.headers["webhook-id"]).toBe(ofAcme.id);
    expect(new Webhook(SECRET).verify(acme.got[0]?.body ?? "", acme.got[0]?.headers as Record<string, string>)).toEqual({
      type: "problem.opened",
      data: ofAcme.problem,
    });
    expect(deployment.got.map((g) => g.headers["webhook-id"]).sort()).toEqual([ofAcme.id, ofDeployment.id].sort());
  });
});
