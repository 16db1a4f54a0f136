import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sampleEvent } from "../helpers/edge.js";
import { reviewRecord } from "../helpers/mirror-records.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

// The console of a deployment with a registered account (docs/accounts.md): each page reads the
// account its URL names, every link between the pages keeps it, and the header switches it.

const ACME = { id: "acme", apiKey: "svc_live_acme_key_0123456789", signingSecret: "whsec_acme_secret_0123456789" };

let svc: TestService;
const get = (path: string) => fetch(`${svc.url}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, redirect: "manual" });
const page = async (path: string) => {
  const res = await get(path);
  expect(res.status, path).toBe(200);
  return res.text();
};
const acmeReview = sampleEvent({ type: "review.created", data: reviewRecord("rev_acme") });
const acmeVisit = sampleEvent({ type: "guest.visited", data: {} });
const defaultReview = sampleEvent({ type: "review.created", data: reviewRecord("rev_default") });

/** Every link and form target into the console on a page, but its stylesheet and script. */
const consoleLinks = (html: string) =>
  [...html.matchAll(/(?:href|action)="(\/console[^"]*)"/g)]
    .map((m) => m[1]!.replaceAll("&amp;", "&"))
    .filter((u) => !u.includes("/assets/"));

const logged = (account: string, id: string, status: string) => async () =>
  (await sql`select 1 from events where account_id = ${account} and id = ${id} and status = ${status}`.execute(svc.database.db)).rows
    .length === 1;
const handled = (account: string, id: string) => logged(account, id, "handled");

beforeAll(async () => {
  svc = await startService({ SECRETS_KEY: randomBytes(32).toString("base64"), JOB_ATTEMPTS: "1" }, [
    {
      // acme's failure, for its failures page.
      "*": (e) => {
        if (e.account === "acme" && e.type === "guest.visited") throw new Error("acme's door sensor offline");
      },
    },
  ]);
  await svc.deliver(defaultReview);
  await waitFor(handled("default", defaultReview.id), { what: "default's review handled" });
});
afterAll(async () => svc.stop());

describe("the console with registered accounts", () => {
  it("has no account switcher while no account is registered", async () => {
    const html = await page("/console/events");
    expect(html).not.toContain("data-account-switch");
    expect(html).not.toContain("account=");
  });

  it("shows a registered account's event and record under ?account=acme, and not without it", async () => {
    const added = await fetch(`${svc.url}/accounts`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(ACME),
    });
    expect(added.status).toBe(201);
    for (const event of [acmeReview, acmeVisit]) expect((await svc.deliverTo("acme", event, ACME.signingSecret)).status).toBe(200);
    await waitFor(handled("acme", acmeReview.id), { what: "acme's review handled" });
    await waitFor(logged("acme", acmeVisit.id, "failed"), { what: "acme's visit failed" });

    const events = await page("/console/events?account=acme");
    expect(events).toContain(acmeReview.id);
    expect(events).not.toContain(defaultReview.id);
    const defaults = await page("/console/events");
    expect(defaults).toContain(defaultReview.id);
    expect(defaults).not.toContain(acmeReview.id);

    expect(await page(`/console/events/${acmeReview.id}?account=acme`)).toContain(`Event ${acmeReview.id}`);
    expect((await get(`/console/events/${acmeReview.id}`)).status).toBe(404);
    expect(await page("/console/records/reviews/rev_acme?account=acme")).toContain("reviews rev_acme");
    expect((await get("/console/records/reviews/rev_acme")).status).toBe(404);
    expect(await page("/console/mirror/reviews?account=acme")).toContain("rev_acme");
    expect(await page("/console/mirror/reviews")).not.toContain("rev_acme");
    // Find looks in the page's account, and takes the account along.
    const found = await get(`/console/events?id=rev_acme&account=acme`);
    expect(found.headers.get("location")).toBe("/console/records/reviews/rev_acme?account=acme");
    // From default's page, Find looks in every account and says which holds the id.
    const elsewhere = await get("/console/events?id=rev_acme");
    expect(elsewhere.status).toBe(200);
    const said = await elsewhere.text();
    expect(said).toContain("Account default holds nothing with id rev_acme; account acme holds it: ");
    expect(said).toContain('<a href="/console/records/reviews/rev_acme?account=acme">reviews record</a>');
  });

  it("keeps account=acme on every link and form of acme's pages", async () => {
    for (const path of [
      "/console/events?account=acme",
      `/console/events/${acmeReview.id}?account=acme`,
      "/console/failures?account=acme",
      "/console/mirror/reviews?account=acme",
      "/console/records/reviews/rev_acme?account=acme",
      "/console/health?account=acme",
    ]) {
      const html = await page(path);
      // The JSON summary is the deployment's, whichever account.
      const links = consoleLinks(html).filter((l) => l !== "/console/health.json");
      expect(links.length, path).toBeGreaterThan(4);
      // Links carry it in their query; the GET forms (filters, Find) in a hidden field.
      const forms = [...html.matchAll(/<form[^>]*method="get"[^>]*>(.*?)<\/form>/gs)].map((m) => m[0]);
      for (const link of links.filter((l) => !forms.some((f) => f.includes(`action="${l}"`))))
        expect(new URL(link, svc.url).searchParams.get("account"), `${path}: ${link}`).toBe("acme");
      for (const form of forms.filter((f) => !f.includes("data-account-switch")))
        expect(form, path).toContain('<input type="hidden" name="account" value="acme"/>');
      // The buttons' calls of the operator API take it from the page (the console script).
      expect(html).toContain('<body data-account="acme">');
    }
    // The event page's links reach acme's record and acme's events of its type.
    const event = consoleLinks(await page(`/console/events/${acmeReview.id}?account=acme`));
    expect(event).toContain("/console/events?type=review.created&account=acme");
    const record = consoleLinks(await page("/console/records/reviews/rev_acme?account=acme"));
    expect(record).toContain(`/console/events/${acmeReview.id}?account=acme`);
    // Default's pages carry no account.
    expect(consoleLinks(await page("/console/events")).filter((l) => l.includes("account="))).toEqual([]);
  });

  it("offers default and each account with its sync state in the header, the current one selected", async () => {
    const html = await page("/console/mirror/reviews?account=acme&restaurantId=rest_1");
    const switcher = /<form class="accounts" method="get" action="\/console\/mirror\/reviews" data-account-switch="">(.*?)<\/form>/s.exec(
      html,
    )?.[1];
    expect(switcher).toBeDefined();
    expect(switcher).toContain('<input type="hidden" name="restaurantId" value="rest_1"/>');
    expect(switcher).toContain('<option value="default">default</option>');
    expect(switcher).toContain('<option value="acme" selected="">acme (importing)</option>');
    // The health page lists the accounts' syncs.
    const health = await page("/console/health");
    expect(health).toMatch(/data-testid="accounts".*<a href="\/console\/events\?account=acme">acme<\/a>.*importing/s);
  });

  it("answers a malformed account with the console's 400 page naming the parameter", async () => {
    for (const path of ["/console/events?account=Not%20A%20Slug", "/console/records/reviews/rev_acme?account=ACME"]) {
      const res = await get(path);
      expect(res.status, path).toBe(400);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      expect(await res.text()).toContain("account must be default or an account id");
    }
  });

  it("groups the account's failures, with bulk replays of its events (the script sends the page's account)", async () => {
    const html = await page("/console/failures?account=acme");
    expect(html).toContain("acme&#39;s door sensor offline");
    expect(html).toContain(`/console/events/${acmeVisit.id}?account=acme`);
    expect(html).toContain("data-bulk=");
    expect(html).toContain('data-account="acme"');
  });
});
