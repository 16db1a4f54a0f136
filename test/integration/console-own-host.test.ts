import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";

// What an operator's browser is shown and made to load: ids spelled out when they could reorder
// the page, nothing fetched from another host, a favicon of our own.
let svc: TestService;
const get = (path: string) => fetch(`${svc.url}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

// U+202E (right-to-left override) turns the rest around: shown raw it reads "evt_exe.gpj".
const BIDI_ID = "evt_\u202ejpg.exe";
const SHOWN = "evt_\\u202ejpg.exe";

beforeAll(async () => {
  svc = await startService({ ROLE: "web" });
  await svc.service.eventLog.recordAttempt({
    id: BIDI_ID,
    type: "guest.visited",
    payload: {},
    status: "failed",
    handlers: { "user0:guest.visited": { status: "failed", error: "boom" } },
  });
});
afterAll(async () => svc.stop());

describe("ids with control or bidi characters", () => {
  it("are shown escaped on the event list and the event page (the link still opens the event)", async () => {
    const list = await (await get("/console/events")).text();
    expect(list).toContain(SHOWN);
    expect(list).not.toContain("\u202e");
    expect(list).toContain(`/console/events/${encodeURIComponent(BIDI_ID)}`);
    const page = await get(`/console/events/${encodeURIComponent(BIDI_ID)}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(SHOWN);
    // Raw only where it is data for the API (the replay button's attribute), never as text.
    expect(html.replaceAll(`data-replay-event="${BIDI_ID}"`, "")).not.toContain("\u202e");
  });

  it("are escaped in the API's refusals too", async () => {
    const res = await fetch(`${svc.url}/mirror/orders/${encodeURIComponent("ord_\u202ex")}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.status).toBe(404);
    expect(JSON.stringify(await res.json())).toContain("ord_\\\\u202ex");
  });
});

describe("every page loads only from its own origin", () => {
  it.each(["/console/events", `/console/events/${encodeURIComponent(BIDI_ID)}`, "/console/failures", "/console/mirror", "/admin/queues"])(
    "%s references no other host",
    async (path) => {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      const own = new URL(svc.url).host;
      const hosts = [...(await res.text()).matchAll(/(?:https?:)?\/\/([a-z0-9.-]+(?::\d+)?)/gi)].map((m) => m[1]);
      expect(hosts.filter((h) => h !== own)).toEqual([]);
    },
  );

  it("offers a stop button beside each bulk replay of the failures page (DELETE /events/replays/{id})", async () => {
    expect(await (await get("/console/failures")).text()).toContain("data-bulk-stop");
  });

  it("serves a favicon at /favicon.ico, linked from the console's pages", async () => {
    const icon = await fetch(`${svc.url}/favicon.ico`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get("content-type")).toBe("image/svg+xml");
    expect(await icon.text()).toMatch(/^<svg /);
    expect(await (await get("/console/events")).text()).toContain('<link rel="icon" type="image/svg+xml" href="/favicon.ico"/>');
  });
});
