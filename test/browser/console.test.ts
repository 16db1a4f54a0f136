import { mkdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page, Route } from "playwright-core";
import { launchChromium } from "../helpers/browser.js";
import { sampleEvent } from "../helpers/edge.js";
import { ADMIN_TOKEN } from "../helpers/service.js";
import { startStack, type Stack } from "../helpers/stack.js";
import { waitFor } from "../helpers/wait-for.js";

// The console in a real headless Chromium against a whole stack (sandbox upstream, edge, worker):
// every page, an event found by id, its replay buttons, a bulk dry run, and no request to any
// other host. Screenshots go to docs/img/console-*.png (docs/operations.md shows them).

const SHOTS = "docs/img";
const PRINTER = "kitchen printer offline";
const HOSTILE = "<img src=x onerror=alert(1)>";

let browser: Browser;
let stack: Stack;
let failing = true;
let failedId: string;
let orderId: string;
const teardown: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await launchChromium();
  teardown.push(() => browser.close());
  stack = await startStack({
    env: { JOB_ATTEMPTS: "1" },
    handlers: [
      {
        // A user handler that fails while the printer is "offline": the failed event to find and replay.
        "order.created": () => {
          if (failing) throw new Error(`${PRINTER}: ECONNREFUSED 10.0.0.7:9100`);
        },
      },
    ],
  });
  teardown.push(() => stack.stop());
  const { sandbox } = stack;
  const restaurantId = sandbox.state.restaurants()[0]!.id;
  for (let i = 0; i < 3; i++) orderId = sandbox.actions.createOrder({ restaurantId }).id;
  sandbox.actions.createBooking({
    restaurantId,
    date: "2026-12-24",
    time: "19:30",
    partySize: 4,
    diner: { name: "Ada", email: "ada@example.com" },
  });
  const item = sandbox.state.menuItems().find((m) => m.restaurantId === restaurantId)!;
  sandbox.actions.updateMenuItem(item.id, { price: 12.5 });
  await stack.svc.deliver(sampleEvent({ type: "review.created", data: { id: "rev_hostile", restaurantId, comment: HOSTILE } }));
  await stack.settled();
  const failed = await stack.svc.service.eventLog.query({ type: "order.created", status: "failed" });
  failedId = failed.data[0]!.id;
});
afterAll(async () => {
  for (const step of teardown.reverse()) await step();
});

/**
 * A browser context holding the operator's Basic credentials, refusing (and noting) every request
 * to another origin. A request the page's CSP stops never reaches the network (nor the route): the
 * browser's console report of it counts as a foreign request too.
 */
async function operatorContext(): Promise<{ context: BrowserContext; foreign: string[]; own: string[] }> {
  const context = await browser.newContext({
    httpCredentials: { username: "ops", password: ADMIN_TOKEN },
    viewport: { width: 1180, height: 760 },
  });
  const origin = new URL(stack.svc.url).origin;
  const foreign: string[] = [];
  const own: string[] = [];
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) {
      own.push(url);
      return route.continue();
    }
    foreign.push(url);
    return route.abort("blockedbyclient");
  });
  // Injected by the browser's devtools, so the page's CSP does not apply to this listener.
  await context.exposeBinding("reportCspViolation", (_source, blocked: string) => void foreign.push(`CSP: ${blocked}`));
  await context.addInitScript(`document.addEventListener("securitypolicyviolation", (e) => void window.reportCspViolation(e.blockedURI));`);

  return { context, foreign, own };
}

async function withOperator(use: (page: Page, seen: { foreign: string[]; own: string[] }) => Promise<void>) {
  const { context, foreign, own } = await operatorContext();
  try {
    const page = await context.newPage();
    const dialogs: string[] = [];
    page.on("dialog", (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await use(page, { foreign, own });
    expect(foreign, "requests to another host").toEqual([]);
    expect(dialogs, "script run from data").toEqual([]);
  } finally {
    await context.close();
  }
}

const url = (path: string) => `${stack.svc.url}${path}`;

describe("the console in a real headless Chromium", () => {
  it("walks every page, loading nothing from another host, and takes the docs' screenshots", async () => {
    await withOperator(async (page, seen) => {
      const pages = [
        ["events", "/console/events?range=24h&type=order.*", "Events"],
        ["event", `/console/events/${failedId}`, `Event ${failedId}`],
        ["failures", "/console/failures", "Failures"],
        ["mirror", "/console/mirror/orders", "Mirror: orders"],
        ["mirror-bookings", "/console/mirror/bookings", "Mirror: bookings"],
        ["mirror-menu-items", "/console/mirror/menu-items", "Mirror: menu-items"],
        ["health", "/console/health", "Health"],
      ] as const;
      for (const [name, path, heading] of pages) {
        const response = await page.goto(url(path));
        expect(response?.status(), path).toBe(200);
        await page.getByRole("heading", { level: 1, name: heading }).waitFor();
        if (!name.startsWith("mirror-")) await page.screenshot({ path: `${SHOTS}/console-${name}.png` });
      }
      // The interception saw the pages' own stylesheet and script: it watched every request.
      expect(seen.own.some((u) => u.endsWith("/console/assets/console.css"))).toBe(true);
      expect(seen.own.some((u) => u.endsWith("/console/assets/console.js"))).toBe(true);
    });
  });

  it("fails a page that requests another host (the interception is not blind)", async () => {
    const { context, foreign } = await operatorContext();
    try {
      const page = await context.newPage();
      await page.goto(url("/console/events"));
      // A fetch the CSP refuses, then a navigation (which no CSP of ours governs) the route refuses.
      await page.evaluate(() => fetch("http://198.51.100.7/font.woff2").catch(() => undefined));
      await waitFor(() => foreign.length === 1, { what: "the CSP report of the refused fetch" });
      await page.goto("http://198.51.100.7/").catch(() => undefined);
      expect(foreign[0]).toBe("CSP: http://198.51.100.7/font.woff2");
      expect(foreign[1]).toBe("http://198.51.100.7/");
    } finally {
      await context.close();
    }
  });

  it("finds an event by its id and shows the handler's error, its stack and the change it caused", async () => {
    await withOperator(async (page) => {
      await page.goto(url("/console/events"));
      await page.getByLabel("Find by id").fill(failedId);
      await page.getByRole("button", { name: "Find" }).click();
      await page.waitForURL(url(`/console/events/${failedId}`));
      await page
        .locator("td")
        .filter({ hasText: `${PRINTER}: ECONNREFUSED` })
        .first()
        .waitFor();
      await page.getByText("stack").first().click();
      expect(await page.locator("details pre").first().textContent()).toMatch(/^Error: kitchen printer offline/);
      const change = page.locator("table").filter({ hasText: "Changed fields" });
      expect(await change.textContent()).toContain("webhook");
      expect(await page.getByTestId("attempts").textContent()).toBe("1");
    });
  });

  it("takes an operator with only an order id to its story in two clicks, and asks for a refresh from there", async () => {
    await withOperator(async (page) => {
      // From the mirror: its nav link, then the order's row.
      await page.goto(url("/console/events"));
      await page.getByRole("link", { name: "Mirror", exact: true }).click();
      await page.getByRole("link", { name: orderId, exact: true }).click();
      await page.waitForURL(url(`/console/records/orders/${orderId}`));
      // From the search on every page: the id, then Find.
      await page.goto(url("/console/health"));
      await page.getByLabel("Find by id").fill(orderId);
      await page.getByRole("button", { name: "Find" }).click();
      await page.waitForURL(url(`/console/records/orders/${orderId}`));
      await page.getByRole("heading", { level: 1, name: `orders ${orderId}` }).waitFor();
      const timeline = page.getByTestId("timeline");
      expect(await timeline.textContent()).toContain("order.created");
      expect(await timeline.textContent()).toContain("change.order (webhook read)");
      await page.screenshot({ path: `${SHOTS}/console-record.png` });
      const refresh = page.waitForResponse((r) => r.request().method() === "POST" && r.url() === url(`/records/orders/${orderId}/refresh`));
      await page.getByRole("button", { name: "Refresh now" }).click();
      expect((await refresh).status()).toBe(202);
    });
  });

  it("filters with a wildcard type and the last-hour preset, newest first", async () => {
    await withOperator(async (page) => {
      await page.goto(url("/console/events"));
      await page.getByRole("link", { name: "last hour" }).click();
      await page.waitForURL(/range=1h/);
      await page.getByLabel("Type").fill("order.*");
      await page.getByRole("button", { name: "Filter" }).click();
      await page.waitForURL(/type=order/);
      const types = await page.locator("tbody tr td:nth-child(2)").allTextContents();
      expect(types.length).toBeGreaterThan(0);
      expect(types.every((t) => t.startsWith("order."))).toBe(true);
    });
  });

  it("shows a hostile payload as text, running nothing", async () => {
    await withOperator(async (page) => {
      await page.goto(url("/console/events?type=review.created"));
      await page.locator("tbody a").first().click();
      expect(await page.getByTestId("payload").textContent()).toContain(HOSTILE);
      expect(await page.locator("main img").count()).toBe(0);
    });
  });

  it("sends POST /events/{id}/replay with {} for all handlers, and with the handler for one", async () => {
    await withOperator(async (page) => {
      await page.goto(url(`/console/events/${failedId}`));
      // Each request is held until both were sent: an answered replay polls the event and reloads
      // the page once its attempt is recorded, which could otherwise swallow the second click.
      const held: Route[] = [];
      await page.route(url(`/events/${failedId}/replay`), (route) => {
        held.push(route);
      });
      await page.getByRole("button", { name: "Replay all handlers" }).click();
      await waitFor(() => held.length === 1, { what: "the first replay request" });
      await page.getByRole("button", { name: /^Replay only user:order\.created/ }).click();
      await waitFor(() => held.length === 2, { what: "both replay requests" });
      const sent = held.map((r) => r.request());
      expect(sent.map((r): [string, string, unknown] => [r.method(), r.url(), r.postDataJSON()])).toEqual([
        ["POST", url(`/events/${failedId}/replay`), {}],
        ["POST", url(`/events/${failedId}/replay`), { handler: "user:order.created" }],
      ]);
      expect(sent[0]!.headers()["content-type"]).toBe("application/json");
      await Promise.all(held.map((r) => r.continue()));
      await page.unrouteAll({ behavior: "wait" });
    });
  });

  it("counts a failure group's bulk replay with a dry run before anything runs", async () => {
    await withOperator(async (page) => {
      await page.goto(url("/console/failures"));
      await page.locator("td").filter({ hasText: PRINTER }).first().waitFor();
      const request = page.waitForRequest((r) => r.method() === "POST" && r.url() === url("/events/replay"));
      await page.locator("tbody").getByRole("button", { name: "Count…" }).first().click();
      const body = (await request).postDataJSON() as { filter: Record<string, string>; dryRun: boolean };
      expect(body.dryRun).toBe(true);
      expect(body.filter).toMatchObject({ status: "failed", handler: "user:order.created" });
      expect(Date.parse(body.filter.since!)).toBeLessThan(Date.now());
    });
  });

  // The operator API: POST /events/{id}/replay → 202, then the page counts the new attempt.
  it("replays the failed event from its page and shows the new attempt", async () => {
    failing = false;
    // The test above sent two real replays (which failed again): let them settle first.
    await stack.drained();
    await withOperator(async (page) => {
      await page.goto(url(`/console/events/${failedId}`));
      const attempts = async () => Number(await page.locator("[data-testid=attempts]").textContent());
      const before = await attempts();
      await page.getByRole("button", { name: "Replay all handlers" }).click();
      // The page polls the log and reloads once it counts the new attempt.
      await waitFor(async () => (await attempts()) === before + 1, { timeoutMs: 30_000, what: "the page to show the new attempt" });
      await page.getByRole("heading", { level: 1 }).waitFor();
      expect(await page.locator("td.status-ok").count()).toBeGreaterThan(0);
      await page.screenshot({ path: `${SHOTS}/console-replayed.png` });
    });
  });

  // POST /events/replay with dryRun, then for real, and GET /events/replays/{id} for its progress.
  it("bulk-replays a failure group: the count first, then progress to the end", async () => {
    failing = false;
    await withOperator(async (page) => {
      await page.goto(url("/console/failures"));
      const box = page.locator("tbody [data-bulk]").first();
      await box.getByRole("button", { name: "Count…" }).click();
      // The events still failed (the test above replayed one of the three).
      const remaining = (await stack.svc.service.eventLog.query({ type: "order.created", status: "failed" })).data.length;
      expect(remaining).toBeGreaterThan(0);
      await box.getByText(`Will replay ${remaining} event${remaining === 1 ? "" : "s"}.`).waitFor();
      await box.getByRole("button", { name: `Replay ${remaining} now` }).click();
      await box.getByText(new RegExp(`${remaining} done, 0 failed of ${remaining}`)).waitFor({ timeout: 30_000 });
    });
  });
});
