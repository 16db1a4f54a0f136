import { createHmac } from "node:crypto";
import { Hono } from "hono";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { verifySignature, WebhookSignatureError } from "../../src/events/envelope.js";
import { requireAdminToken } from "../../src/http/guards.js";

// A spy that calls through to the real comparison: it records what was compared, changes nothing.
const compare = vi.hoisted(() => ({ calls: [] as [Buffer, Buffer][] }));
vi.mock("node:crypto", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:crypto")>();
  return {
    ...real,
    timingSafeEqual: (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
      compare.calls.push([Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)]);
      return real.timingSafeEqual(a, b);
    },
  };
});

beforeEach(() => {
  compare.calls = [];
});

/** Flips one bit of the hex digest at `index` (0 = first byte, 31 = last). */
function tamper(hexDigest: string, index: number): string {
  const bytes = Buffer.from(hexDigest, "hex");
  bytes[index] = bytes[index]! ^ 0x01;
  return bytes.toString("hex");
}

describe("constant-time comparisons", () => {
  const body = Buffer.from('{"id":"evt_1","type":"order.created"}');
  const secrets = ["whsec_first", "whsec_second"];
  const good = createHmac("sha256", secrets[0]!).update(body).digest("hex");

  it("a signature wrong in its first byte and one wrong in its last byte take the same path", () => {
    const paths = [0, 31].map((index) => {
      compare.calls = [];
      expect(() => verifySignature(body, `sha256=${tamper(good, index)}`, secrets)).toThrow(WebhookSignatureError);
      return compare.calls.map(([a, b]) => [a.length, b.length]);
    });
    // Every secret is tried, each through one full-length timingSafeEqual: no early exit on the byte that differs.
    expect(paths[0]).toEqual([
      [32, 32],
      [32, 32],
    ]);
    expect(paths[1]).toEqual(paths[0]);
  });

  it("a matching signature is found through timingSafeEqual too", () => {
    expect(verifySignature(body, `sha256=${good}`, secrets)).toBe(0);
    expect(compare.calls).toHaveLength(1);
  });

  it("admin tokens wrong in the first or last character, or of another length, are compared as equal-length digests", async () => {
    const token = "admin-token-0123456789";
    const app = new Hono().use(requireAdminToken(token)).get("/", (c) => c.text("ok"));
    const lengths: number[][][] = [];
    for (const presented of [`x${token.slice(1)}`, `${token.slice(0, -1)}x`, `${token}-longer`, "short"]) {
      compare.calls = [];
      const res = await app.request("/", { headers: { authorization: `Bearer ${presented}` } });
      expect(res.status).toBe(401);
      lengths.push(compare.calls.map(([a, b]) => [a.length, b.length]));
    }
    expect(lengths).toEqual(Array.from({ length: 4 }, () => [[32, 32]]));
    compare.calls = [];
    expect((await app.request("/", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect(compare.calls).toHaveLength(1);
  });
});
