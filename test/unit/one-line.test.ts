import { describe, expect, it } from "vitest";
import { oneLine } from "../../src/base/text.js";

describe("oneLine", () => {
  it("keeps text up to the bound, one space for each run of white space, controls spelled out", () => {
    expect(oneLine("  GET /orders\n\tanswered 503  ", 100)).toBe("GET /orders answered 503");
    expect(oneLine("bad\u0001byte \u202eevil", 100)).toBe("bad\\x01byte \\u202eevil");
    expect(oneLine("abcde", 5)).toBe("abcde");
  });

  it("cuts longer text to the bound, the last code unit an ellipsis, never half a surrogate pair", () => {
    expect(oneLine("abcdef", 5)).toBe("abcd…");
    expect(oneLine("abc😀def", 5)).toBe("abc…");
  });
});
