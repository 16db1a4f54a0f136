import { randomBytes } from "node:crypto";
import { pino } from "pino";
import { beforeEach, describe, expect, it } from "vitest";
import { signStandardWebhook, standardSecretKey, standardWebhookHeaders } from "../../src/base/standard-webhooks.js";
import { signPayload } from "../../src/events/envelope.js";
import { signDelivery } from "../../src/events/signature-schemes.js";
import { createApp } from "../../src/http/app.js";
import type { RejectReason } from "../../src/http/webhook-route.js";
import { memorySink } from "../helpers/memory-sink.js";

// Standard Webhooks at the edge (issue 54.5), in memory through app.request(): the env company
// signs so (SIGNATURE_SCHEME=standard-webhooks), an account keeps today's scheme beside it.
const NEW = `whsec_${randomBytes(24).toString("base64")}`;
const OLD = `whsec_${randomBytes(32).toString("base64")}`;
const ACCOUNT_SECRET = "whsec_acme_secret_0123456789";
const TOLERANCE = 300;

let refused: RejectReason[];
let secretIndexes: number[];
const mem = memorySink();
const { sink, stored } = mem;
// The edge's clock, fixed: a timestamp's distance from "now" is exact, however long a test takes.
const NOW = 1_800_000_000;
const appWith = (nowSeconds: number, secrets = [NEW, OLD]) =>
  createApp({
    logger: pino({ level: "silent" }),
    ready: () => Promise.resolve(),
    webhooks: {
      sink,
      signingSecrets: secrets,
      signatureScheme: "standard-webhooks",
      signatureToleranceSeconds: TOLERANCE,
      clock: () => nowSeconds * 1000 + 999,
      accounts: { get: (id) => (id === "acme" ? { signingSecrets: [ACCOUNT_SECRET], signatureScheme: "svc" } : undefined) },
      maxBodyBytes: 4096,
      observer: {
        rejected: (reason) => void refused.push(reason),
        accepted: (info) => void secretIndexes.push(info.secretIndex),
      },
    },
  });
const app = appWith(NOW);

beforeEach(() => {
  mem.reset();
  refused = [];
  secretIndexes = [];
});

const nowSeconds = () => NOW;
const body = (fields: Record<string, unknown> = {}) => JSON.stringify({ type: "order.created", data: { id: "ord_1" }, ...fields });
const post = (text: string, headers: Record<string, string>, path = "/webhooks", on = app) =>
  on.request(path, { method: "POST", body: text, headers: { "content-type": "application/json", ...headers } });
const signed = (
  text: string,
  { id = "msg_1", at = nowSeconds(), secrets = [NEW] }: { id?: string; at?: number; secrets?: string[] } = {},
) => standardWebhookHeaders(secrets.map(standardSecretKey), id, at, text);
const codeOf = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;

describe("Standard Webhooks at POST /webhooks", () => {
  it("takes the spec's own vector: its signature matches (the body, which has no type, is then refused as an event)", async () => {
    // https://github.com/standard-webhooks/standard-webhooks: the body is {"test": 2432232314}, no envelope.
    const vector = appWith(1614265330, ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]);
    const res = await post(
      '{"test": 2432232314}',
      {
        "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
      },
      "/webhooks",
      vector,
    );
    expect(res.status).toBe(400);
    expect(await codeOf(res)).toBe("invalid_event");
    // Signed with another key, the same message is a 401.
    const other = `whsec_${randomBytes(24).toString("base64")}`;
    const wrong = signStandardWebhook(standardSecretKey(other), "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}');
    const res2 = await post(
      '{"test": 2432232314}',
      { "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330", "webhook-signature": wrong },
      "/webhooks",
      vector,
    );
    expect(res2.status).toBe(401);
  });

  it("accepts a signed delivery, its event id from webhook-id, and any of the secrets during a rotation", async () => {
    const text = body({ id: "evt_in_body" });
    const res = await post(text, signed(text, { id: "msg_a" }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true, id: "msg_a", duplicate: false });
    // The body's own id is kept as sent, in the payload; dedup goes by webhook-id.
    expect(stored[0]).toMatchObject({ id: "msg_a", payload: { id: "evt_in_body" } });
    const again = body({ id: "evt_other" });
    expect(await (await post(again, signed(again, { id: "msg_a" }))).json()).toMatchObject({ duplicate: true });
    const old = body();
    expect((await post(old, signed(old, { id: "msg_b", secrets: [OLD] }))).status).toBe(200);
    expect(secretIndexes).toEqual([0, 0, 1]);
  });

  it("accepts a list where only the last signature is good, skipping unknown versions", async () => {
    const text = body();
    const headers = signed(text, { id: "msg_list" });
    const bad = signStandardWebhook(standardSecretKey(`whsec_${randomBytes(24).toString("base64")}`), "msg_list", nowSeconds(), text);
    headers["webhook-signature"] = `${bad} v2,${"A".repeat(43)}= v1a,zzz ${headers["webhook-signature"]}`;
    expect((await post(text, headers)).status).toBe(200);
  });

  it("accepts timestamps at the tolerance either way", async () => {
    const text = body();
    expect((await post(text, signed(text, { id: "msg_early", at: nowSeconds() - TOLERANCE }))).status).toBe(200);
    expect((await post(text, signed(text, { id: "msg_late", at: nowSeconds() + TOLERANCE }))).status).toBe(200);
  });

  it.each([
    [
      "a cut signature",
      (h: Record<string, string>) => ({ ...h, "webhook-signature": h["webhook-signature"]!.slice(0, -3) }),
      "invalid_signature",
    ],
    ["an empty v1 signature", (h: Record<string, string>) => ({ ...h, "webhook-signature": "v1," }), "invalid_signature"],
    ["a timestamp 5 min + 1 s old", (h: Record<string, string>) => h, "timestamp_out_of_tolerance", -(TOLERANCE + 1)],
    ["a timestamp 5 min + 1 s ahead", (h: Record<string, string>) => h, "timestamp_out_of_tolerance", TOLERANCE + 1],
    ["no webhook-signature", ({ "webhook-signature": _, ...h }: Record<string, string>) => h, "invalid_signature"],
    ["no webhook-id", ({ "webhook-id": _, ...h }: Record<string, string>) => h, "invalid_signature"],
    ["no webhook-timestamp", ({ "webhook-timestamp": _, ...h }: Record<string, string>) => h, "invalid_signature"],
    ["a non-numeric timestamp", (h: Record<string, string>) => ({ ...h, "webhook-timestamp": "soon" }), "invalid_signature"],
    ["a signature of another message id", (h: Record<string, string>) => ({ ...h, "webhook-id": "msg_other" }), "invalid_signature"],
    [
      "an X-SVC-Signature instead",
      (_h: Record<string, string>, text: string) => ({ "x-svc-signature": signPayload(text, NEW) }),
      "invalid_signature",
    ],
  ] as const)("refuses %s: 401, one reason counted, nothing stored", async (_name, change, reason, offset = 0) => {
    const text = body();
    const headers = (change as (h: Record<string, string>, text: string) => Record<string, string>)(
      signed(text, { id: "msg_x", at: nowSeconds() + offset }),
      text,
    );
    const res = await post(text, headers);
    expect(res.status).toBe(401);
    expect(await codeOf(res)).toBe("invalid_signature");
    expect(refused).toEqual([reason]);
    expect(stored).toEqual([]);
  });

  it("refuses a webhook-id that breaks the id rule, after the signature matched", async () => {
    const text = body();
    const res = await post(text, signed(text, { id: ".." }));
    expect(res.status).toBe(400);
    expect(await codeOf(res)).toBe("invalid_event_id");
    expect(stored).toEqual([]);
  });

  it("keeps each company's own scheme: an account signing as svc beside it", async () => {
    const text = body({ id: "evt_acme" });
    expect((await post(text, { "x-svc-signature": signPayload(text, ACCOUNT_SECRET) }, "/webhooks/acme")).status).toBe(200);
    expect((await post(text, signed(text), "/webhooks/acme")).status).toBe(401);
    expect(stored.map((e) => [e.id, e.account])).toEqual([["evt_acme", "acme"]]);
  });

  it("accepts what the sandbox's sender and trigger sign (signDelivery), either scheme", async () => {
    const text = body();
    expect((await post(text, signDelivery("standard-webhooks", NEW, "msg_sent", text, NOW))).status).toBe(200);
    expect((await post(text, signDelivery("svc", ACCOUNT_SECRET, "ignored", text), "/webhooks/acme")).status).toBe(200);
  });
});
