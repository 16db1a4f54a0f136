import { describe, expect, it } from "vitest";
import { newestSigningSecret } from "../../src/config/config.js";

describe("newestSigningSecret", () => {
  it.each([
    ["one", "one"],
    ["new,old", "new"],
    [" new , old ", "new"],
    [undefined, undefined],
    ["", undefined],
    [",old", undefined],
  ])("of %j is %j", (list, secret) => {
    expect(newestSigningSecret(list)).toBe(secret);
  });
});
