import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { launchChromium } from "../helpers/browser.js";
import { sampleEvent } from "../helpers/edge.js";
import { reviewRecord } from "../helpers/mirror-records.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

// The console's account switcher in a real headless Chromium: an operator picks a registered
// account in the header, reads its events and replays one from its page, the API calls naming it.

const ACME = { id: "acme", apiKey: "svc_live_acme_key_0123456789", signingSecret: "whsec_acme_secret_0123456789" };
const SENSOR = "acme's door sensor offline";

let browser: Browser;
let svc: TestService;
let failing = true;
const acmeVisit = sampleEvent({ type: "guest.visited", data: {} });
const acmeReview = sampleEvent({ type: "review.created", data: reviewRecord("rev_acme") });
const defaultReview = sampleEvent({ type: "review.created", data: reviewRecord("rev_default") });
const teardown: (() => Promise<unknown>)[] = [];

async function deliverToAcme(event: object) {
  expect((await svc.deliverTo("acme", event, ACME.signingSecret)).status).toBe(200);
}

const statusOf = async (account: string, id: string) =>
  (await svc.database.db.selectFrom("events").select("status").where("account_id", "=", account).where("id", "=", id).executeTakeFirst())
    ?.status;

beforeAll(async () => {
  browser = await launchChromium();
  teardown.push(() => browser.close());
  svc = await startService({ SECRETS_KEY: randomBytes(32).toString("base64"), JOB_ATTEMPTS: "1" }, [
    {
      // acme's visits fail while its sensor is "offline": the failed event to replay.
      "*": (e) => {
        if (failing && e.account === "acme" && e.type === "guest.visited") throw new Error(SENSOR);
      },
    },
  ]);
  teardown.push(() => svc.stop());
  const added = await fetch(`${svc.url}/accounts`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(ACME),
  });
  expect(added.status).toBe(201);
  await svc.deliver(defaultReview);
  await deliverToAcme(acmeReview);
  await deliverToAcme(acmeVisit);
  await waitFor(async () => (await statusOf("default", defaultReview.id)) === "handled", { what: "default's review handled" });
  await waitFor(async () => (await statusOf("acme", acmeReview.id)) === "handled", { what: "acme's review handled" });
  await waitFor(async () => (await statusOf("acme", acmeVisit.id)) === "failed", { what: "acme's visit failed" });
});
afterAll(async () => {
  for (const step of teardown.reverse()) await step();
});

const url = (path: string) => `${svc.url}${path}`;

async function withOperator(use: (page: Page) => Promise<void>, options: { javaScriptEnabled?: boolean } = {}) {
  const context = await browser.newContext({ httpCredentials: { username: "ops", password: ADMIN_TOKEN }, ...options });
  try {
    await use(await context.newPage());
  } finally {
    await context.close();
  }
}

/** The event ids of the events list on the page. */
const listedIds = (page: Page) => page.locator("tbody tr td:first-child a").allTextContents();

describe("the console's account switcher in a real headless Chromium", () => {
  it("switches to a registered account's events on picking it, and replays one of its events from its page", async () => {
    await withOperator(async (page) => {
      await page.goto(url("/console/events"));
      expect(await listedIds(page)).toEqual([defaultReview.id]);
      const switcher = page.getByLabel("Account");
      expect(await switcher.locator("option").allTextContents()).toEqual(["default", "acme (importing)"]);
      // The script submits on change: no button to press.
      expect(await page.getByRole("button", { name: "Switch" }).isVisible()).toBe(false);
      await switcher.selectOption("acme");
      await page.waitForURL(url("/console/events?account=acme"));
      expect((await listedIds(page)).sort()).toEqual([acmeReview.id, acmeVisit.id].sort());
      expect(await page.getByLabel("Account").inputValue()).toBe("acme");

      await page.getByRole("link", { name: acmeVisit.id }).click();
      await page.waitForURL(url(`/console/events/${acmeVisit.id}?account=acme`));
      await page.locator("td").filter({ hasText: SENSOR }).first().waitFor();
      const attempts = async () => Number(await page.getByTestId("attempts").textContent());
      const before = await attempts();
      failing = false;
      const replay = page.waitForResponse((r) => r.request().method() === "POST" && r.url().includes("/replay"));
      await page.getByRole("button", { name: "Replay all handlers" }).click();
      const answered = await replay;
      expect(answered.url()).toBe(url(`/events/${acmeVisit.id}/replay?account=acme`));
      expect(answered.status()).toBe(202);
      // The page polls acme's event (GET /events/{id}?account=acme) and reloads once it counts the attempt.
      await waitFor(async () => (await attempts()) === before + 1, { timeoutMs: 30_000, what: "the page to show the new attempt" });
      expect(page.url()).toBe(url(`/console/events/${acmeVisit.id}?account=acme`));
      expect(await statusOf("acme", acmeVisit.id)).toBe("handled");
      expect(await page.locator("#replay-status.bad").count()).toBe(0);
    });
  });

  it("switches without the script too, through the switcher's button, keeping the page's filters", async () => {
    await withOperator(
      async (page) => {
        await page.goto(url("/console/events?type=review.*"));
        await page.getByLabel("Account").selectOption("acme");
        await page.getByRole("button", { name: "Switch" }).click();
        await page.waitForURL(/account=acme/);
        expect(new URL(page.url()).searchParams.get("type")).toBe("review.*");
        expect(await listedIds(page)).toEqual([acmeReview.id]);
      },
      { javaScriptEnabled: false },
    );
  });
});
