import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parseSignatureHeader, signPayload, verifySignature, WebhookSignatureError } from "../../src/events/envelope.js";

const body = Buffer.from('{"id":"evt_1","type":"order.created"}');
const secret = "whsec_unit";
const digest = createHmac("sha256", secret).update(body).digest();

function reason(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    if (err instanceof WebhookSignatureError) return err.reason;
    throw err;
  }
  return "ok";
}

describe("verifySignature", () => {
  it("matches GitHub's published vector for the same sha256=<hex> form", () => {
    // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    const github = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    expect(signPayload("Hello, World!", "It's a Secret to Everybody")).toBe(github);
    expect(verifySignature(Buffer.from("Hello, World!"), github, ["It's a Secret to Everybody"])).toBe(0);
    expect(reason(() => verifySignature(Buffer.from("Hello, World?"), github, ["It's a Secret to Everybody"]))).toBe("mismatch");
  });

  it("accepts the hex digest the upstream sends, in either case", () => {
    expect(verifySignature(body, signPayload(body, secret), [secret])).toBe(0);
    expect(verifySignature(body, `sha256=${digest.toString("hex").toUpperCase()}`, [secret])).toBe(0);
    expect(verifySignature(body, ` SHA256=${digest.toString("hex")} `, [secret])).toBe(0);
  });

  it("accepts base64, padded or not, standard or URL-safe", () => {
    const b64 = digest.toString("base64");
    expect(verifySignature(body, `sha256=${b64}`, [secret])).toBe(0);
    expect(verifySignature(body, `sha256=${b64.replace(/=$/, "")}`, [secret])).toBe(0);
    expect(verifySignature(body, `sha256=${digest.toString("base64url")}`, [secret])).toBe(0);
  });

  it("returns the index of the secret that matched, for rotation", () => {
    expect(verifySignature(body, signPayload(body, "new"), ["old", "new"])).toBe(1);
  });

  it("tells missing, malformed and mismatched apart", () => {
    expect(reason(() => verifySignature(body, undefined, [secret]))).toBe("missing");
    expect(reason(() => verifySignature(body, "  ", [secret]))).toBe("missing");
    expect(reason(() => verifySignature(body, digest.toString("hex"), [secret]))).toBe("malformed");
    expect(reason(() => verifySignature(body, "sha1=" + digest.toString("hex"), [secret]))).toBe("malformed");
    expect(reason(() => verifySignature(body, "sha256=" + digest.toString("hex").slice(2), [secret]))).toBe("malformed");
    expect(reason(() => verifySignature(body, "sha256=zz" + digest.toString("hex").slice(2), [secret]))).toBe("malformed");
    expect(reason(() => verifySignature(body, "sha256=" + digest.toString("hex").slice(0, 62) + "zz", [secret]))).toBe("malformed");
    expect(reason(() => verifySignature(body, signPayload(body, "other"), [secret]))).toBe("mismatch");
    expect(reason(() => verifySignature(Buffer.concat([body, Buffer.from(" ")]), signPayload(body, secret), [secret]))).toBe("mismatch");
  });

  it("parses only 32-byte digests", () => {
    expect(parseSignatureHeader("sha256=" + "ab".repeat(32))?.length).toBe(32);
    expect(parseSignatureHeader("sha256=" + "ab".repeat(31))).toBeUndefined();
    expect(parseSignatureHeader("sha256=")).toBeUndefined();
  });
});
