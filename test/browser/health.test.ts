import { mkdirSync } from "node:fs";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { createMinuteSampler } from "../../src/metrics/minute-samples.js";
import { redisKeys } from "../../src/redis/redis.js";
import { launchChromium } from "../helpers/browser.js";
import { ADMIN_TOKEN } from "../helpers/service.js";
import { startStack, type Stack } from "../helpers/stack.js";

// The health page in a real headless Chromium at 1280×800, the width a new operator found it
// overflowing at: it fits, draws its charts and loads nothing from another host. Its screenshot
// goes to docs/img/console-health.png (docs/operations.md shows it).

const SHOTS = "docs/img";
const MINUTE = 60_000;

let browser: Browser;
let stack: Stack;
const teardown: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await launchChromium();
  teardown.push(() => browser.close());
  let printerDown = false;
  stack = await startStack({
    env: { JOB_ATTEMPTS: "1" },
    handlers: [
      {
        "order.created": () => {
          if (printerDown) throw new Error("kitchen printer offline");
        },
      },
    ],
  });
  teardown.push(() => stack.stop());
  const { sandbox, svc } = stack;
  const restaurantId = sandbox.state.restaurants()[0]!.id;
  // The production sampler on the service's own registry, its clock stepped a minute at a time
  // (the service's own sampler writes once a minute, too slowly for a test).
  const clock = { now: Date.now() - 12 * MINUTE };
  const sampler = createMinuteSampler({
    redis: svc.redis,
    key: redisKeys(svc.prefix).minuteSamples,
    metrics: svc.service.metrics,
    logger: pino({ level: "silent" }),
    now: () => clock.now,
  });
  for (let minute = 0; minute < 12; minute++) {
    printerDown = minute === 9;
    for (let i = 0; i < (minute % 4) + 1; i++) sandbox.actions.createOrder({ restaurantId });
    await stack.drained();
    await sampler.sampleOnce();
    clock.now += MINUTE;
  }
});
afterAll(async () => {
  for (const step of teardown.reverse()) await step();
});

describe("the health page in a real headless Chromium", () => {
  it("fits 1280 px without horizontal scroll, draws its charts, loads nothing from another host", async () => {
    const context = await browser.newContext({
      httpCredentials: { username: "ops", password: ADMIN_TOKEN },
      viewport: { width: 1280, height: 800 },
    });
    const origin = new URL(stack.svc.url).origin;
    const foreign: string[] = [];
    const own: string[] = [];
    try {
      const page = await context.newPage();
      page.on("request", (request) => (new URL(request.url()).origin === origin ? own : foreign).push(request.url()));
      // A style or script the CSP refuses never becomes a request: its report counts as foreign too.
      await context.exposeBinding("reportCspViolation", (_source, blocked: string) => void foreign.push(`CSP: ${blocked}`));
      await page.addInitScript(
        `document.addEventListener("securitypolicyviolation", (e) => void window.reportCspViolation(e.blockedURI));`,
      );

      const response = await page.goto(`${stack.svc.url}/console/health`);
      expect(response?.status()).toBe(200);
      await page.getByRole("heading", { level: 1, name: "Health" }).waitFor();
      // A string, as the tests are compiled without the DOM library.
      expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(1280);
      const charts = page.getByTestId("charts");
      expect(await charts.locator("svg path").count()).toBeGreaterThanOrEqual(3);
      expect(await charts.getByText("No samples yet").count()).toBeLessThan(4);
      // The failed delivery shows as a word with its colour, and its rule on hover.
      const bad = page.locator("table .level-bad").first();
      expect(await bad.textContent()).toBe("bad");
      expect(await bad.getAttribute("title")).toMatch(/^Bad when/);
      expect(await page.locator("main").textContent()).not.toContain("svc_");
      await page.screenshot({ path: `${SHOTS}/console-health.png`, fullPage: true });
      expect(own.some((u) => u.endsWith("/console/assets/console.css"))).toBe(true);
      expect(foreign, "requests to another host").toEqual([]);
    } finally {
      await context.close();
    }
  });
});
