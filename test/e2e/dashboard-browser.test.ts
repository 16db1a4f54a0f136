import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { launchChromium } from "../helpers/browser.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextJob } from "../helpers/job-events.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";

let browser: Browser;
let svc: TestService;
beforeAll(async () => {
  browser = await launchChromium();
  svc = await startService();
  const done = nextJob(svc.service.worker!.eventWorker, "completed");
  await svc.deliver(sampleEvent({ type: "review.created", data: { id: "rev_browser", restaurantId: "rest_1" } }));
  await done;
});
afterAll(async () => {
  await browser?.close();
  await svc?.stop();
});

describe("queue dashboard in a real headless Chromium", () => {
  it("loads with the admin token and shows both queues", async () => {
    const context = await browser.newContext({ httpCredentials: { username: "ops", password: ADMIN_TOKEN } });
    try {
      const page = await context.newPage();
      const response = await page.goto(`${svc.url}/admin/queues`);
      expect(response?.status()).toBe(200);
      await page.getByText("events", { exact: true }).first().waitFor();
      await page.getByText("sync", { exact: true }).first().waitFor();
      await page.getByText("events", { exact: true }).first().click();
      await page.getByText(/completed/i).first().waitFor();
      expect(await page.title()).toContain("svc-webhooks");
      await page.screenshot({ path: "test-results/dashboard.png" });
    } finally {
      await context.close();
    }
  });

  it("refuses without the token, and with a wrong one", async () => {
    for (const credentials of [undefined, { username: "ops", password: "not-the-admin-token" }]) {
      const context = await browser.newContext(credentials ? { httpCredentials: credentials } : {});
      try {
        const page = await context.newPage();
        // Chromium either shows the 401 or, holding credentials the server keeps refusing, gives up.
        // What it received is read from the response itself: the page may still be swapping in
        // Chromium's own error page, so page.content() would race with that navigation.
        const outcome = await page.goto(`${svc.url}/admin/queues`).then(
          async (res) => ({ status: res?.status(), body: (await res?.text()) ?? "" }),
          (err: Error) => ({ status: /ERR_INVALID_AUTH_CREDENTIALS/.exec(err.message)?.[0] ?? err.message, body: "" }),
        );
        expect([401, "ERR_INVALID_AUTH_CREDENTIALS"]).toContain(outcome.status);
        expect(outcome.body).not.toContain("bull-board");
      } finally {
        await context.close();
      }
    }
  });

  it("shows the metrics page to the same browser with the token", async () => {
    const context = await browser.newContext({ httpCredentials: { username: "ops", password: ADMIN_TOKEN } });
    try {
      const page = await context.newPage();
      await page.goto(`${svc.url}/metrics`);
      expect(await page.textContent("body")).toContain('svc_webhook_events_received_total{type="review.created",secret="0"} 1');
    } finally {
      await context.close();
    }
  });
});
