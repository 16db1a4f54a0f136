import { readFileSync } from "node:fs";
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { deadlineIn } from "../../src/base/deadline.js";
import { CLOSE_GRACE_MS, EXIT_GRACE_MS } from "../../src/service.js";

const fly = parse(readFileSync(new URL("../../fly.toml", import.meta.url), "utf8")) as {
  kill_timeout: number;
  env: { SHUTDOWN_TIMEOUT_MS: string };
};

describe("the shutdown's arithmetic", () => {
  it("ends every stop inside fly's kill_timeout: SHUTDOWN_TIMEOUT_MS + 5 s, by default and as fly.toml sets it", () => {
    expect(EXIT_GRACE_MS).toBe(5000);
    expect(CLOSE_GRACE_MS).toBeLessThan(EXIT_GRACE_MS);
    const byDefault = loadConfig({ ROLE: "worker" }).shutdownTimeoutMs;
    for (const drainMs of [byDefault, Number(fly.env.SHUTDOWN_TIMEOUT_MS)]) {
      expect(drainMs + EXIT_GRACE_MS).toBeLessThan(fly.kill_timeout * 1000);
    }
  });

  it("gives each part what is left of one deadline, never a span of its own", async () => {
    const now = Date.now();
    const drain = deadlineIn(20_000, now - 19_000); // the signal came 19 s ago
    expect(drain.at).toBe(now + 1000);
    expect(drain.left()).toBeLessThanOrEqual(1000);
    expect(drain.plus(CLOSE_GRACE_MS).at).toBe(drain.at + CLOSE_GRACE_MS);
    const passed = deadlineIn(1000, now - 5000);
    expect(passed.left()).toBe(0);
    expect(passed.signal.aborted || (await new Promise((r) => passed.signal.addEventListener("abort", () => r(true))))).toBe(true);
    // A part that is not done when the deadline has passed is cut at once, however long it would take.
    await expect(passed.within(new Promise(() => undefined), "a hung close")).rejects.toThrow("a hung close timed out after 0 ms");
    await expect(drain.within(Promise.resolve("done"), "a quick close")).resolves.toBe("done");
  });
});
