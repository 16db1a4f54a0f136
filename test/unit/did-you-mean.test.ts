import { describe, expect, it } from "vitest";
import { closest, editDistance } from "../../src/bin/command.js";

describe("editDistance", () => {
  it.each([
    ["replay", "replay", 0],
    ["replai", "replay", 1],
    ["dryrun", "dry-run", 1],
    ["ulr", "url", 1],
    ["", "abc", 3],
    ["kitten", "sitting", 3],
  ])("%s → %s is %i", (a, b, d) => {
    expect(editDistance(a, b)).toBe(d);
    expect(editDistance(b, a)).toBe(d);
  });
});

describe("closest", () => {
  const commands = ["serve", "dev", "sandbox", "trigger", "replay", "backfill", "reconcile", "migrate"];
  it("names the known word a slip is nearest to", () => {
    expect(closest("replai", commands)).toBe("replay");
    expect(closest("reconcil", commands)).toBe("reconcile");
    expect(closest("--dryrun", ["--dry-run", "--fresh", "--confirm"])).toBe("--dry-run");
    expect(closest("SERVE", commands)).toBe("serve");
  });

  it("names none when nothing is near enough to be a slip", () => {
    expect(closest("deploy", commands)).toBeUndefined();
    expect(closest("--bogus", ["--dry-run", "--fresh", "--confirm"])).toBeUndefined();
  });
});
