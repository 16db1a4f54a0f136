import { mkdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { launchChromium } from "../helpers/browser.js";
import { ADMIN_TOKEN } from "../helpers/service.js";
import { startStack, type Stack } from "../helpers/stack.js";
import { waitFor } from "../helpers/wait-for.js";

// An event whose handler failed twice, then succeeded, on its page in a real headless Chromium:
// one row per attempt (n of N, started, duration, outcome, error, next retry), nothing loaded
// from another host. Its screenshot goes to docs/img/console-event-attempts.png (docs/operations.md).

const SHOTS = "docs/img";
const PRINTER = "kitchen printer offline: ECONNREFUSED 10.0.0.7:9100";

let browser: Browser;
let stack: Stack;
let eventId: string;
const teardown: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await launchChromium();
  teardown.push(() => browser.close());
  let failures = 0;
  stack = await startStack({
    env: { JOB_ATTEMPTS: "5", JOB_BACKOFF_MS: "300" },
    handlers: [
      {
        // The printer comes back on the third attempt.
        "order.created": () => {
          if (failures < 2) throw new Error(`${PRINTER} (${++failures} of 2)`);
        },
      },
    ],
  });
  teardown.push(() => stack.stop());
  const restaurantId = stack.sandbox.state.restaurants()[0]!.id;
  stack.sandbox.actions.createOrder({ restaurantId });
  const log = stack.svc.service.eventLog;
  await waitFor(async () => (await log.query({ type: "order.created", status: "handled" })).data.length === 1, {
    what: "the order's event handled on its third attempt",
    timeoutMs: 30_000,
  });
  eventId = (await log.query({ type: "order.created" })).data[0]!.id;
});
afterAll(async () => {
  for (const step of teardown.reverse()) await step();
});

describe("an event's attempts in a real headless Chromium", () => {
  it("shows a row per attempt of the handler that failed twice, then succeeded", async () => {
    const context = await browser.newContext({
      httpCredentials: { username: "ops", password: ADMIN_TOKEN },
      viewport: { width: 1180, height: 760 },
      // A zone away from UTC, so the page's script adds the local time beside the server's UTC.
      timezoneId: "Asia/Kolkata",
    });
    const origin = new URL(stack.svc.url).origin;
    const foreign: string[] = [];
    await context.route("**/*", (route) => {
      if (new URL(route.request().url()).origin === origin) return route.continue();
      foreign.push(route.request().url());
      return route.abort("blockedbyclient");
    });
    try {
      const page = await context.newPage();
      expect((await page.goto(`${stack.svc.url}/console/events/${eventId}`))?.status()).toBe(200);
      const handler = page.locator('[data-handler-attempts="user:order.created"]');
      const rows = handler.locator("tbody tr");
      await rows.first().waitFor();
      expect(await rows.count()).toBe(3);
      const cells = async (n: number) => (await rows.nth(n).locator("td").allTextContents()).map((t) => t.trim());
      const [first, second, third] = [await cells(0), await cells(1), await cells(2)];
      // #, started, duration, outcome, error, next retry.
      expect([first[0], first[3], first[4]]).toEqual(["1 of 5", "failed", `Error: ${PRINTER} (1 of 2)`]);
      expect([second[0], second[3], second[4]]).toEqual(["2 of 5", "failed", `Error: ${PRINTER} (2 of 2)`]);
      expect([third[0], third[3], third[4], third[5]]).toEqual(["3 of 5", "ok", "—", "—"]);
      // Human times (UTC to the second, how long ago, and the viewer's local time), a duration, and when each retry was due.
      for (const time of [first[1], second[1], third[1], first[5], second[5]].map(String)) {
        const shown =
          /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)Z \((?:\d+ s ago|just now)\) · (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) local \(UTC\+05:30\)$/.exec(
            time,
          );
        expect(shown, time).not.toBeNull();
        const [, utc, local] = shown!;
        expect(Date.parse(`${local!.replace(" ", "T")}Z`) - Date.parse(`${utc!.replace(" ", "T")}Z`)).toBe(5.5 * 3600 * 1000);
      }
      expect(third[2]).toMatch(/^\d+ ms$|^\d+\.\d s$/);
      await page.getByTestId("handlers").screenshot({ path: `${SHOTS}/console-event-attempts.png` });
      expect(foreign, "requests to another host").toEqual([]);
    } finally {
      await context.close();
    }
  });
});
