import { describe, expect, it } from "vitest";
import { HEALTH_CHARTS, MinuteChart, niceCeiling, seriesPath } from "../../src/http/console/health-page.js";

const NOW = new Date("2026-11-25T12:00:30Z");
const CURRENT = Math.floor(NOW.getTime() / 60_000);
const deliveries = HEALTH_CHARTS[0]!;
const html = async (samples: Parameters<typeof MinuteChart>[0]["samples"]) =>
  (await MinuteChart({ spec: deliveries, samples, now: NOW })).toString();
const commands = (d: string) => d.match(/[ML]/g) ?? [];

describe("the minute chart (inline SVG drawn on the server)", () => {
  it("draws a series as a path with one point a sampled minute", async () => {
    const samples = Array.from({ length: 45 }, (_, i) => ({ minute: CURRENT - 44 + i, values: { delivered: i, failed: i % 2 } }));
    const out = await html(samples);
    const paths = [...out.matchAll(/<path d="([^"]+)"/g)].map((m) => m[1]!);
    // handled and failed for good; the retried line has no samples and draws nothing.
    expect(paths).toHaveLength(2);
    for (const d of paths) expect(commands(d)).toEqual(["M", ...Array<string>(44).fill("L")]);
    expect(out).toContain("handled: latest 44");
    expect(out).toContain('failed, to be retried: <span class="muted">no samples</span>');
  });

  it("breaks the line at a minute with no sample, and leaves out minutes before the window", () => {
    const points = [CURRENT - 70, CURRENT - 5, CURRENT - 4, CURRENT - 1, CURRENT].map((minute) => ({ minute, value: 1 }));
    expect(commands(seriesPath(points, { now: NOW.getTime(), minutes: 60, top: 1 }))).toEqual(["M", "L", "M", "L"]);
    // The newest minute sits on the right edge, a minute 59 back on the left.
    expect(seriesPath([{ minute: CURRENT, value: 0 }], { now: NOW.getTime(), minutes: 60, top: 1 })).toBe("M550.0 148.0");
    expect(seriesPath([{ minute: CURRENT - 59, value: 1 }], { now: NOW.getTime(), minutes: 60, top: 1 })).toBe("M52.0 10.0");
  });

  it("says there are no samples yet instead of an empty chart", async () => {
    const out = await html([]);
    expect(out).toContain("No samples yet");
    expect(out).not.toContain("<svg");
  });

  it("refers to no other host (no URL, no xlink, no external font)", async () => {
    const out = await html([{ minute: CURRENT, values: { delivered: 3 } }]);
    expect(out).not.toMatch(/https?:|url\(|xlink|@import/);
  });

  it("tops the scale at 1, 2 or 5 times a power of ten", () => {
    expect([0, 1, 3, 7, 12, 180, 2001].map(niceCeiling)).toEqual([1, 1, 5, 10, 20, 200, 5000]);
  });
});
