import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandboxCompanies, type SandboxCompanies } from "../../src/sandbox/companies.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";

// Issue 53, item 4: `POST /accounts` (and a rotation that changes the key) tries the key with one
// page before storing it. The sandbox refuses a key it does not know (401), as the API does.

const KEYS = [0, 1].map(() => `svc_live_${randomBytes(16).toString("hex")}`);
const UNKNOWN_KEY = `svc_live_${randomBytes(16).toString("hex")}`;
const SECRET = "whsec_key_trial_secret_0123456789";

const call = (svc: TestService, method: string, path: string, body?: unknown) =>
  fetch(`${svc.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

/** A port nothing listens on: the API out of reach. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("adding an account tries its key", () => {
  let companies: SandboxCompanies;
  let svc: TestService;
  beforeAll(async () => {
    companies = createSandboxCompanies(KEYS.map((key) => ({ apiKeys: [key] })));
    svc = await startService({
      API_BASE_URL: await companies.listen(),
      API_KEY: KEYS[0]!,
      SECRETS_KEY: randomBytes(32).toString("base64"),
    });
  }, 60_000);
  afterAll(async () => {
    await svc.stop();
    await companies.close();
  });

  it("refuses a key the API refuses with 422 key_refused, storing nothing, and stores one it accepts with no warning", async () => {
    const refused = await call(svc, "POST", "/accounts", { id: "acme", apiKey: UNKNOWN_KEY, signingSecret: SECRET });
    expect(refused.status).toBe(422);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("key_refused");
    expect(body.error.message).toContain("refused by the API (401)");
    expect(JSON.stringify(body)).not.toContain(UNKNOWN_KEY);
    expect((await call(svc, "GET", "/accounts/acme")).status).toBe(404);

    const added = await call(svc, "POST", "/accounts", { id: "acme", apiKey: KEYS[1], signingSecret: SECRET });
    expect(added.status).toBe(201);
    expect(await added.json()).not.toHaveProperty("warning");
    // One page of one order, with the new key.
    expect(companies.companies[1]!.requestLog.some((r) => r.path.startsWith("/api/v1/orders"))).toBe(true);
  });

  it("refuses a rotation to a key the API refuses, keeping the old one", async () => {
    const rotated = await call(svc, "POST", "/accounts/acme/rotate", { apiKey: UNKNOWN_KEY });
    expect(rotated.status).toBe(422);
    expect(((await rotated.json()) as { error: { code: string } }).error.code).toBe("key_refused");
    expect((await call(svc, "POST", "/accounts/acme/rotate", { apiKey: KEYS[1] })).status).toBe(200);
  });
});

describe("adding an account while the API is out of reach", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({
      API_BASE_URL: `http://127.0.0.1:${await deadPort()}`,
      API_KEY: KEYS[0]!,
      SECRETS_KEY: randomBytes(32).toString("base64"),
    });
  }, 60_000);
  afterAll(() => svc.stop());

  it("stores the account and says the key could not be tried, naming why", async () => {
    const added = await call(svc, "POST", "/accounts", { id: "acme", apiKey: KEYS[1], signingSecret: SECRET });
    expect(added.status).toBe(201);
    const body = (await added.json()) as { id: string; warning?: string };
    expect(body.id).toBe("acme");
    expect(body.warning).toMatch(/could not be reached to try apiKey \(GET \/api\/v1\/orders/);
    expect(body.warning).not.toContain(KEYS[1]);
    expect((await call(svc, "GET", "/accounts/acme")).status).toBe(200);
  }, 60_000);
});
