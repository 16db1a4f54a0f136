import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sampleEvent } from "../helpers/edge.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

const HOSTILE = `<script>alert("x")</script><img src=x onerror=alert(1)>`;
const basic = (password: string) => `Basic ${Buffer.from(`ops:${password}`).toString("base64")}`;

let svc: TestService;
const get = (path: string, headers: Record<string, string> = { authorization: basic(ADMIN_TOKEN) }) =>
  fetch(`${svc.url}${path}`, { headers, redirect: "manual" });

const xssId = `evt_xss_${Date.now()}`;
const failingId = `evt_fail_${Date.now()}`;
const laterId = `evt_later_${Date.now()}`;

beforeAll(async () => {
  svc = await startService({ JOB_ATTEMPTS: "1" }, [
    {
      "review.created": (e) => {
        if ((e.data as { fail?: boolean }).fail) throw new Error(`refused <b>boom</b> ${HOSTILE}`);
      },
    },
  ]);
  await svc.deliver(sampleEvent({ id: xssId, type: "review.created", data: { id: "rev_1", restaurantId: "rest_1", text: HOSTILE } }));
  await svc.deliver(sampleEvent({ id: failingId, type: "review.created", data: { id: "rev_2", restaurantId: "rest_1", fail: true } }));
  await waitFor(async () => (await svc.service.eventLog.get(failingId))?.status === "failed", { what: "the failing event to fail" });
  await svc.deliver(sampleEvent({ id: laterId, type: "review.created", data: { id: "rev_3", restaurantId: "rest_1" } }));
  await waitFor(async () => (await svc.service.eventLog.get(laterId))?.status === "handled", { what: "the later event to be handled" });
  await waitFor(async () => (await svc.service.eventLog.get(xssId))?.status === "handled", { what: "the hostile event to be handled" });
});
afterAll(async () => svc.stop());

describe("the console's access and headers", () => {
  it("answers 401 with a Basic challenge without credentials, and with a wrong token", async () => {
    for (const headers of [{}, { authorization: basic("wrong-token") }] as Record<string, string>[]) {
      const res = await get("/console/events", headers);
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Basic /);
      expect(await res.text()).not.toContain(xssId);
    }
  });

  it("serves the pages to Basic auth with the token as password, and to a Bearer token", async () => {
    for (const authorization of [basic(ADMIN_TOKEN), `Bearer ${ADMIN_TOKEN}`]) {
      const res = await get("/console/events", { authorization });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      expect(await res.text()).toContain(laterId);
    }
  });

  it("forbids framing and anything from another origin (CSP), on pages, assets and refusals", async () => {
    for (const [path, headers] of [
      ["/console/health", undefined],
      ["/console/assets/console.js", undefined],
      ["/console/events", {}],
    ] as const) {
      const res = await get(path, headers);
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    }
  });

  it("links the queue dashboard and is linked back from it", async () => {
    expect(await (await get("/console/events")).text()).toContain('href="/admin/queues"');
    expect(await (await get("/admin/queues")).text()).toContain("/console");
  });
});

describe("the console's pages", () => {
  it("escapes a hostile payload and a hostile error message on the event page", async () => {
    for (const id of [xssId, failingId]) {
      const res = await get(`/console/events/${id}`);
      expect(res.status).toBe(200);
      const html = await res.text();
      expect(html).not.toContain("<script>alert");
      expect(html).not.toContain("<img src=x");
      expect(html).toContain("&lt;script&gt;alert(");
    }
    const failures = await (await get("/console/failures")).text();
    expect(failures).not.toContain("<b>boom");
    expect(failures).toContain("&lt;b&gt;boom");
  });

  it("shows each handler's outcome with its error and stack, and replay buttons for all and for each", async () => {
    const html = await (await get(`/console/events/${failingId}`)).text();
    expect(html).toContain("refused &lt;b&gt;boom&lt;/b&gt;");
    expect(html).toMatch(/<summary>stack<\/summary><pre>Error: refused/);
    expect(html).toContain(`data-replay-event="${failingId}"`);
    expect(html).toMatch(/data-handler="user:review.created"/);
  });

  it("shows a row per attempt, and for an event logged before attempts were kept, its latest error and count", async () => {
    const html = await (await get(`/console/events/${failingId}`)).text();
    expect(html).toMatch(/<tr data-attempt="1"><td class="attempt-number">1 of 1<\/td>/);
    // As an older release logged it: outcomes with no runs.
    const oldId = `evt_old_${Date.now()}`;
    for (let n = 0; n < 2; n++)
      await svc.service.eventLog.recordAttempt({
        id: oldId,
        type: "review.created",
        payload: {},
        status: "failed",
        handlers: { "user:review.created": { status: "failed", error: "refused by an older release" } },
      });
    // Long ago, out of the other tests' failure groups.
    await svc.database.db.updateTable("events").set({ received_at: "2026-01-01T00:00:00Z" }).where("id", "=", oldId).execute();
    const old = await (await get(`/console/events/${oldId}`)).text();
    expect(old).not.toContain("<tr data-attempt");
    expect(old).toContain("refused by an older release");
    expect(old).toContain("2 earlier attempts of this handler are counted but not listed");
  });

  it("lists newest first, finds an event by id, and says so when there is none", async () => {
    const html = await (await get("/console/events?type=review.*")).text();
    expect(html.indexOf(laterId)).toBeGreaterThan(0);
    expect(html.indexOf(laterId)).toBeLessThan(html.indexOf(failingId));
    // Each row names the record its event is about, linking to that record's story.
    expect(html).toContain(`<a href="/console/records/reviews/rev_3">review <span class="mono">rev_3</span></a>`);
    expect(html).toContain(`<a href="/console/records/reviews/rev_2">review <span class="mono">rev_2</span></a>`);
    const found = await get(`/console/events?id=${failingId}`);
    expect(found.status).toBe(302);
    expect(found.headers.get("location")).toBe(`/console/events/${failingId}`);
    const missing = await get("/console/events?id=evt_nowhere");
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain("No event, order, booking, menu item or review with id evt_nowhere");
  });

  it("filters by status (failed), handler and a time preset", async () => {
    const html = await (await get("/console/events?status=failed&handler=user:review.created&range=1h")).text();
    expect(html).toContain(failingId);
    expect(html).not.toContain(laterId);
    const retrying = await (await get("/console/events?status=retrying")).text();
    expect(retrying).toContain("No event matches.");
  });

  it("groups failures by handler and error, with a dry-run bulk replay for each group", async () => {
    const html = await (await get("/console/failures?range=1h")).text();
    expect(html).toContain("user:review.created");
    expect(html).toContain("1 failed handler outcome in 1 group");
    expect(html).toContain("data-bulk=");
    expect(html).toContain("&quot;handler&quot;:&quot;user:review.created&quot;");
  });

  it("shows the mirror with read and sync times, and health as a page and as JSON", async () => {
    const mirror = await (await get("/console/mirror/reviews")).text();
    expect(mirror).toContain("rev_3");
    expect(mirror).toContain("Last read from the API");
    const health = await get("/console/health.json");
    const summary = (await health.json()) as {
      freshness: { kind: string; lastWriteAgeSeconds: number | null }[];
      queues: { queue: string }[];
    };
    expect(summary.freshness.find((f) => f.kind === "reviews")?.lastWriteAgeSeconds).toEqual(expect.any(Number));
    expect(summary.freshness.find((f) => f.kind === "orders")?.lastWriteAgeSeconds).toBeNull();
    expect(summary.queues.map((q) => q.queue).sort()).toEqual(["events", "sync"]);
    const page = await (await get("/console/health")).text();
    expect(page).toContain("Mirror freshness");
  });
});

describe("the console's filters are parsed strictly", () => {
  it.each([
    ["/console/events?bogus=1", "unknown parameter bogus"],
    ["/console/events?status=nope", "status must be one of"],
    ["/console/events?type=Order%20created", "type must be"],
    ["/console/events?range=2h", "range must be one of"],
    ["/console/events?range=1h&since=2026-01-01T00:00:00Z", "either a range preset or since"],
    ["/console/events?since=yesterday", "since"],
    ["/console/events?cursor=%21%21", "cursor"],
    ["/console/failures?range=forever", "range must be one of"],
    ["/console/mirror/orders?colour=red", "unknown parameter colour"],
    ["/console/mirror/orders?status=not-a-status", "status"],
    ["/console/events/evt_1?x=1", "unknown parameter x"],
  ])("answers 400 to %s, naming what is wrong", async (path, message) => {
    const res = await get(path);
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await res.text()).toContain(message);
  });

  it("answers 404 for an unknown event, page or mirror kind", async () => {
    for (const path of ["/console/events/evt_nowhere", "/console/nowhere", "/console/mirror/planets"])
      expect((await get(path)).status).toBe(404);
  });
});
