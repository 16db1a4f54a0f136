import { describe, expect, it } from "vitest";
import { ESCAPED_PAYLOAD_KEY, fromStoredPayload, needsEscapedForm, storableFreeText, toEscapedForm } from "../../src/mirror/values.js";

/** What the event log writes for a payload, then reads back (the jsonb round trip is JSON's). */
const roundTrip = (payload: unknown) => {
  const json = JSON.stringify(payload);
  const stored: unknown = needsEscapedForm(payload, json) ? toEscapedForm(json) : payload;
  return { escaped: stored !== payload, back: fromStoredPayload(JSON.parse(JSON.stringify(stored))) };
};

describe("stored payloads", () => {
  it.each([
    ["a \\u0000 in a value", { a: "x\u0000y" }],
    ["a \\u0000 in a key", { "k\u0000": 1 }],
    ["a lone high surrogate", { a: ["\ud83d"] }],
    ["a lone low surrogate", { a: "\ude00 tail" }],
    ["a payload shaped like the escaped form", { [ESCAPED_PAYLOAD_KEY]: '{"a":1}' }],
  ])("escapes %s and reads it back as sent", (_what, payload) => {
    expect(roundTrip(payload)).toEqual({ escaped: true, back: payload });
  });

  it.each([
    ["plain text", { a: "hello", b: [1, 2] }],
    ["a valid surrogate pair (an emoji)", { a: "🙂" }],
    ["other control characters jsonb takes", { a: "\u0001\u001f\t" }],
    ["a literal backslash-u0000 (not a NUL)", { a: "\\u0000 and \\ud800" }],
    ["the escape key beside other keys", { [ESCAPED_PAYLOAD_KEY]: "x", other: 1 }],
  ])("stores %s as is", (_what, payload) => {
    expect(roundTrip(payload)).toEqual({ escaped: false, back: payload });
  });

  it("makes free text storable: NUL spelled out, a lone surrogate replaced, pairs kept", () => {
    expect(storableFreeText("a\u0000b \ud800 🙂")).toBe("a\\u0000b \ufffd 🙂");
  });
});
