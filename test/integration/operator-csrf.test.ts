import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";

// The worker stays off so an added job stays in the queue for inspection.
let svc: TestService;
beforeAll(async () => {
  svc = await startService({ ROLE: "web" });
});
afterAll(async () => {
  await svc.stop();
});

const ADD = "/admin/queues/api/queues/events/add";
const forged = (name: string) => JSON.stringify({ name, data: { type: name, payload: { forged: true } }, options: {} });
const basic = `Basic ${Buffer.from(`ops:${ADMIN_TOKEN}`).toString("base64")}`;
const jobNames = async () => (await svc.service.eventsQueue.getJobs(["waiting", "delayed", "prioritized"])).map((j) => j.name);

describe("operator surface against cross-site request forgery", () => {
  it("refuses the forged cross-site form post that adds a job past the signature check", async () => {
    // What a page on another site makes the operator's browser send: Basic credentials it holds,
    // a text/plain body (a simple request, no preflight) that is JSON inside.
    const res = await fetch(`${svc.url}${ADD}`, {
      method: "POST",
      headers: { authorization: basic, origin: "https://evil.example", "sec-fetch-site": "cross-site", "content-type": "text/plain" },
      body: forged("review.created"),
    });
    expect(res.status).toBe(403);
    expect(await jobNames()).not.toContain("review.created");
  });

  it("refuses another Origin even with a JSON body, and a text/plain body even with no Origin", async () => {
    const crossOrigin = await fetch(`${svc.url}${ADD}`, {
      method: "POST",
      headers: { authorization: basic, origin: "http://127.0.0.1:1", "content-type": "application/json" },
      body: forged("order.cancelled"),
    });
    expect(crossOrigin.status).toBe(403);
    const plain = await fetch(`${svc.url}${ADD}`, {
      method: "POST",
      headers: { authorization: basic, "content-type": "text/plain" },
      body: forged("order.cancelled"),
    });
    expect(plain.status).toBe(415);
    expect(await jobNames()).not.toContain("order.cancelled");
  });

  it("still lets the dashboard itself (same origin) and scripts (no Origin) act", async () => {
    const fromPage = await fetch(`${svc.url}${ADD}`, {
      method: "POST",
      headers: { authorization: basic, origin: svc.url, "sec-fetch-site": "same-origin", "content-type": "application/json" },
      body: forged("menu.updated"),
    });
    expect(fromPage.status).toBe(200);
    const fromScript = await fetch(`${svc.url}/admin/queues/api/queues/events/pause`, {
      method: "PUT",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(fromScript.status).toBe(200);
    expect(await jobNames()).toContain("menu.updated");
  });

  it("forbids framing the dashboard and the other operator routes", async () => {
    for (const path of ["/admin/queues", "/metrics", "/mirror/reviews?restaurantId=r"]) {
      const res = await svc.admin(path);
      expect(res.headers.get("content-security-policy"), path).toBe("frame-ancestors 'none'");
      expect(res.headers.get("x-frame-options"), path).toBe("DENY");
    }
  });
});
