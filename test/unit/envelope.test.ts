import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  EnvelopeError,
  EventIdentifierError,
  MAX_IDENTIFIER_LENGTH,
  MAX_JSON_DEPTH,
  parseEnvelope,
  PayloadTooDeepError,
} from "../../src/events/envelope.js";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("parseEnvelope", () => {
  it("keeps the id and every field the sender put in", () => {
    const text = '{"id":"evt_1","type":"order.created","extra":{"a":1}}';
    const env = parseEnvelope(bytes(text));
    expect(env).toEqual({ id: "evt_1", type: "order.created", payload: { id: "evt_1", type: "order.created", extra: { a: 1 } }, text });
  });

  it("gives the body text without a byte order mark, so it stays valid JSON to store", () => {
    const env = parseEnvelope(new Uint8Array([0xef, 0xbb, 0xbf, ...bytes('{"type":"a"}')]));
    expect(JSON.parse(env.text)).toEqual(env.payload);
  });

  it("derives the id from the SHA-256 of the raw body when there is none", () => {
    const raw = '{"type":"review.created"}';
    expect(parseEnvelope(bytes(raw)).id).toBe(createHash("sha256").update(raw).digest("hex"));
  });

  it.each([
    ["not JSON", "{nope"],
    ["invalid UTF-8", Buffer.from([0x7b, 0xff, 0x7d])],
    ["an array", '[{"type":"x"}]'],
    ["a string", '"order.created"'],
    ["null", "null"],
    ["no type", '{"id":"evt_1"}'],
    ["an empty type", '{"type":""}'],
    ["a numeric type", '{"type":7}'],
    ["a numeric id", '{"type":"x","id":7}'],
  ])("refuses %s", (_name, raw) => {
    expect(() => parseEnvelope(typeof raw === "string" ? bytes(raw) : raw)).toThrow(EnvelopeError);
  });
});

describe("parseEnvelope: identifiers", () => {
  const body = (fields: Record<string, string>) => bytes(JSON.stringify({ ...fields, data: { note: "\u0000 \ud800 is fine here" } }));

  it.each([
    ["id", { id: "x".repeat(MAX_IDENTIFIER_LENGTH + 1), type: "a" }, "invalid_event_id"],
    ["id", { id: "evt\u0000", type: "a" }, "invalid_event_id"],
    ["id", { id: "evt\u009b", type: "a" }, "invalid_event_id"],
    ["id", { id: "evt\udc00", type: "a" }, "invalid_event_id"],
    ["type", { type: "t".repeat(MAX_IDENTIFIER_LENGTH + 1) }, "invalid_event_type"],
    ["type", { type: "order\u001b[2J" }, "invalid_event_type"],
    ["type", { type: "order\u007f" }, "invalid_event_type"],
    ["type", { type: "order\ud800" }, "invalid_event_type"],
  ])("refuses an %s that cannot be an identifier", (field, fields, code) => {
    expect(() => parseEnvelope(body(fields))).toThrow(EventIdentifierError);
    expect(() => parseEnvelope(body(fields))).toThrow(expect.objectContaining({ code, field }));
  });

  it("accepts identifiers of MAX_IDENTIFIER_LENGTH, any script and emoji, and any string in the data", () => {
    const id = "é".repeat(MAX_IDENTIFIER_LENGTH - 2) + "🙂";
    const env = parseEnvelope(body({ id, type: "注文.作成" }));
    expect(env).toMatchObject({ id, type: "注文.作成", payload: { data: { note: "\u0000 \ud800 is fine here" } } });
  });
});

describe("parseEnvelope: nesting", () => {
  const nested = (depth: number) => `{"type":"x","data":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;

  it("accepts nesting up to MAX_JSON_DEPTH", () => {
    expect(parseEnvelope(bytes(nested(MAX_JSON_DEPTH))).type).toBe("x");
  });

  it("refuses nesting deeper than MAX_JSON_DEPTH with payload_too_deep", () => {
    expect(() => parseEnvelope(bytes(nested(MAX_JSON_DEPTH + 1)))).toThrow(PayloadTooDeepError);
    expect(() => parseEnvelope(bytes(nested(100_000)))).toThrow(expect.objectContaining({ code: "payload_too_deep" }));
  });

  it("ends a string at a quote after an escaped backslash, and counts the brackets after it", () => {
    const text = `{"type":"x","s":"a\\\\","d":${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}}`;
    expect(JSON.parse(text)).toMatchObject({ s: "a\\" });
    expect(() => parseEnvelope(bytes(text))).toThrow(PayloadTooDeepError);
  });

  it("accepts more containers than MAX_JSON_DEPTH side by side (the bracket count is only a bound)", () => {
    const wide = JSON.stringify({ type: "x", items: Array.from({ length: 3 * MAX_JSON_DEPTH }, () => ({ tags: [] })) });
    expect(parseEnvelope(bytes(wide)).type).toBe("x");
  });

  it("does not count brackets inside strings, escaped quotes included", () => {
    const deepText = JSON.stringify({ type: "x", note: `\\"${"[{".repeat(5000)}` });
    expect(parseEnvelope(bytes(deepText)).type).toBe("x");
  });
});
