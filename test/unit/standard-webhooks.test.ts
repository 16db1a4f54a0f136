import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import {
  matchStandardWebhook,
  readStandardWebhookHeaders,
  signStandardWebhook,
  StandardWebhookError,
  standardSecretKey,
  standardSecretProblem,
  standardWebhookHeaders,
} from "../../src/base/standard-webhooks.js";

// The scheme's own known-answer vector (standard-webhooks spec, and the issue).
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TS = 1614265330;
const BODY = '{"test": 2432232314}';
const SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
const key = standardSecretKey(SECRET);
const body = Buffer.from(BODY);

const headersOf = (values: Record<string, string>) => (name: string) => values[name];
const vectorHeaders = { "webhook-id": ID, "webhook-timestamp": String(TS), "webhook-signature": SIGNATURE };

function failure(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    if (err instanceof StandardWebhookError) return err.reason;
    throw err;
  }
  return "ok";
}
const verify = (values: Record<string, string>, now = TS, keys = [key]) =>
  failure(() => matchStandardWebhook(readStandardWebhookHeaders(headersOf(values), now), body, keys));

describe("Standard Webhooks", () => {
  it("signs the spec's vector to the spec's signature", () => {
    expect(signStandardWebhook(key, ID, TS, BODY)).toBe(SIGNATURE);
    expect(standardWebhookHeaders([key], ID, TS, BODY)).toEqual(vectorHeaders);
  });

  it("verifies the spec's vector", () => {
    expect(verify(vectorHeaders)).toBe("ok");
  });

  it("refuses a cut signature, an empty v1 and a missing header", () => {
    expect(verify({ ...vectorHeaders, "webhook-signature": SIGNATURE.slice(0, -2) })).toBe("malformed");
    expect(verify({ ...vectorHeaders, "webhook-signature": "v1," })).toBe("malformed");
    for (const name of Object.keys(vectorHeaders)) {
      const { [name]: _, ...rest } = vectorHeaders as Record<string, string>;
      expect(verify(rest)).toBe("missing");
    }
  });

  it("refuses a timestamp 5 min + 1 s off either way, and takes one exactly 5 min off", () => {
    expect(verify(vectorHeaders, TS + 301)).toBe("too_old");
    expect(verify(vectorHeaders, TS - 301)).toBe("too_new");
    expect(verify(vectorHeaders, TS + 300)).toBe("ok");
    expect(verify(vectorHeaders, TS - 300)).toBe("ok");
  });

  it("refuses a timestamp that is not unix seconds", () => {
    for (const stamp of ["abc", "1614265330.5", "-1614265330", "2021-02-25T15:02:10Z", ""]) {
      expect(verify({ ...vectorHeaders, "webhook-timestamp": stamp })).toBe(stamp === "" ? "missing" : "malformed");
    }
  });

  it("takes a list where only the last signature is good, and skips versions it does not know", () => {
    const wrong = signStandardWebhook(standardSecretKey("whsec_" + Buffer.alloc(24, 7).toString("base64")), ID, TS, BODY);
    expect(verify({ ...vectorHeaders, "webhook-signature": `${wrong} v1a,AAAA v2,xyz ${SIGNATURE}` })).toBe("ok");
    expect(verify({ ...vectorHeaders, "webhook-signature": `${wrong} v1a,AAAA` })).toBe("mismatch");
    expect(verify({ ...vectorHeaders, "webhook-signature": "v1a,AAAA v2,xyz" })).toBe("malformed");
  });

  it("refuses a body or id other than the one signed", () => {
    expect(
      failure(() => matchStandardWebhook(readStandardWebhookHeaders(headersOf(vectorHeaders), TS), Buffer.from(BODY + " "), [key])),
    ).toBe("mismatch");
    expect(verify({ ...vectorHeaders, "webhook-id": "msg_other" })).toBe("mismatch");
  });

  it("returns which key matched, for rotation", () => {
    const other = standardSecretKey("whsec_" + Buffer.alloc(32, 1).toString("base64"));
    const headers = readStandardWebhookHeaders(headersOf(vectorHeaders), TS);
    expect(matchStandardWebhook(headers, body, [other, key])).toBe(1);
  });

  it("agrees with the Standard Webhooks project's own library, both ways", () => {
    const lib = new Webhook(SECRET);
    const now = new Date();
    const stamp = Math.floor(now.getTime() / 1000);
    const ours = standardWebhookHeaders([key], "msg_ours", stamp, BODY);
    expect(() => lib.verify(BODY, ours)).not.toThrow();
    const theirs = lib.sign("msg_theirs", now, BODY);
    const headers = { "webhook-id": "msg_theirs", "webhook-timestamp": String(stamp), "webhook-signature": theirs };
    expect(verify(headers, stamp)).toBe("ok");
  });

  it("says what is wrong with a secret it cannot use", () => {
    expect(standardSecretProblem(SECRET)).toBeUndefined();
    expect(standardSecretProblem("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")).toMatch(/starts with whsec_/);
    expect(standardSecretProblem("whsec_not base64!")).toMatch(/base64/);
    expect(standardSecretProblem("whsec_" + Buffer.alloc(8).toString("base64"))).toMatch(/16 to 64 bytes \(this one 8\)/);
    expect(() => standardSecretKey("plain")).toThrow(/whsec_/);
  });
});
