import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { streamEvents } from "../helpers/ingest-stream.js";

// A delivery signed by the standardwebhooks library itself (what Svix-based senders run), to an
// account registered with signatureScheme standard-webhooks, through a real server (issue 54.5).

const SECRET = `whsec_${randomBytes(24).toString("base64")}`;
let svc: TestService;
const call = (method: string, path: string, body: unknown) =>
  fetch(`${svc.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

beforeAll(async () => {
  svc = await startService({ ROLE: "web", SECRETS_KEY: randomBytes(32).toString("base64") });
});
afterAll(() => svc.stop());

describe("Standard Webhooks from the standardwebhooks library", () => {
  it("registers an account under the scheme, refusing a secret it cannot use, and accepts the library's delivery once", async () => {
    const base = { id: "svix-co", apiKey: "svc_live_svix_key_0123456789", signatureScheme: "standard-webhooks" };
    const bad = await call("POST", "/accounts", { ...base, signingSecret: "not-a-whsec-secret-at-all" });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/signingSecret a Standard Webhooks secret starts with whsec_/);
    const added = await call("POST", "/accounts", { ...base, signingSecret: SECRET });
    expect(added.status).toBe(201);
    expect(await added.json()).toMatchObject({ id: "svix-co", signatureScheme: "standard-webhooks" });

    const payload = JSON.stringify({ type: "order.created", timestamp: new Date().toISOString(), data: { id: "ord_1" } });
    const send = (id: string) =>
      fetch(`${svc.url}/webhooks/svix-co`, {
        method: "POST",
        body: payload,
        headers: {
          "content-type": "application/json",
          "webhook-id": id,
          "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
          "webhook-signature": new Webhook(SECRET).sign(id, new Date(), payload),
        },
      });
    const res = await send("msg_2Yv8lib");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true, id: "msg_2Yv8lib", duplicate: false });
    expect(await (await send("msg_2Yv8lib")).json()).toMatchObject({ duplicate: true });
    const stored = await streamEvents(svc.redis as Redis, svc.prefix);
    expect(stored.map((e) => [e.id, e.account, e.payload.type])).toEqual([["msg_2Yv8lib", "svix-co", "order.created"]]);

    // Signed as today's scheme, the same account refuses it.
    const svcSigned = await fetch(`${svc.url}/webhooks/svix-co`, {
      method: "POST",
      body: payload,
      headers: { "content-type": "application/json", "x-svc-signature": `sha256=${"0".repeat(64)}` },
    });
    expect(svcSigned.status).toBe(401);

    // Back to svc on rotate: needs a new secret, and keeps only it.
    const noSecret = await call("POST", "/accounts/svix-co/rotate", { signatureScheme: "svc" });
    expect(noSecret.status).toBe(400);
    const rotated = await call("POST", "/accounts/svix-co/rotate", {
      signatureScheme: "svc",
      signingSecret: "whsec_plain_svc_secret_0123",
    });
    expect(await rotated.json()).toMatchObject({ signatureScheme: "svc", signingSecrets: 1 });
  });
});
