import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { launchChromium } from "../helpers/browser.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextFinished } from "../helpers/job-events.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";

let browser: Browser;
let svc: TestService;
let attacker: Server;
let attackerUrl: string;
// What beforeAll opened, closed last to first (a beforeAll that failed half-way leaves only that).
const teardown: (() => Promise<unknown>)[] = [];
beforeAll(async () => {
  browser = await launchChromium();
  teardown.push(() => browser.close());
  svc = await startService();
  teardown.push(() => svc.stop());
  attacker = await startAttackerSite(() => svc.url);
  teardown.push(() => new Promise((r) => attacker.close(r)));
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
  const done = nextFinished(svc.service.worker!, "completed");
  await svc.deliver(sampleEvent({ type: "review.created", data: { id: "rev_browser", restaurantId: "rest_1" } }));
  await done;
});
afterAll(async () => {
  for (const step of teardown.reverse()) await step();
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
      await page
        .getByText(/completed/i)
        .first()
        .waitFor();
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
          (err: unknown) => {
            const message = err instanceof Error ? err.message : String(err);
            return { status: /ERR_INVALID_AUTH_CREDENTIALS/.exec(message)?.[0] ?? message, body: "" };
          },
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

const ADD_PATH = "/admin/queues/api/queues/events/add";
const FORGED = "forged.by.another.site";

/**
 * Another origin (a second loopback port) whose page makes the visitor's browser post a job to
 * the dashboard API: a text/plain form (no CORS preflight) whose body is JSON, sent with whatever
 * credentials the browser holds for the dashboard.
 */
function startAttackerSite(target: () => string): Promise<Server> {
  const server = createServer((_req, res) => {
    const field = `{"name":"${FORGED}","data":{"forged":true},"options":{},"pad":"`;
    res.setHeader("content-type", "text/html; charset=utf-8");
    res.end(`<!doctype html><title>cats</title>
<form id="f" method="POST" enctype="text/plain" action="${target()}${ADD_PATH}">
<input type="hidden" name='${field}' value='"}'></form>
<script>document.getElementById("f").submit()</script>`);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const forgedJobs = async () =>
  (await svc.service.eventsQueue.getJobs(["waiting", "active", "completed", "failed", "delayed", "prioritized"])).filter(
    (j) => j.name === FORGED,
  );

describe("the dashboard against a page on another origin", () => {
  it("refuses the forged job a cross-origin page posts with the operator's credentials", async () => {
    const context = await browser.newContext({ httpCredentials: { username: "ops", password: ADMIN_TOKEN } });
    try {
      const page = await context.newPage();
      // The operator has the dashboard open: the browser holds the Basic credentials.
      expect((await page.goto(`${svc.url}/admin/queues`))?.status()).toBe(200);
      const posted = page.waitForResponse((res) => res.url().endsWith(ADD_PATH));
      await page.goto(attackerUrl);
      const answer = await posted;
      expect(answer.request().headers().authorization ?? (await answer.request().allHeaders()).authorization).toMatch(/^Basic /);
      expect(answer.status()).toBe(403);
      expect(await forgedJobs()).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("still lets the dashboard's own page add a job (same origin, JSON)", async () => {
    const context = await browser.newContext({ httpCredentials: { username: "ops", password: ADMIN_TOKEN } });
    try {
      const page = await context.newPage();
      await page.goto(`${svc.url}/admin/queues`);
      const status = await page.evaluate(async (path) => {
        const res = await fetch(path, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ name: "added.by.operator", data: {}, options: {} }),
        });
        return res.status;
      }, ADD_PATH);
      expect(status).toBe(200);
    } finally {
      await context.close();
    }
  });
});
