import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sampleEvent } from "../helpers/edge.js";
import { nextFinished } from "../helpers/job-events.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startService();
  const done = nextFinished(svc.service.worker!, "completed");
  await svc.deliver(sampleEvent({ type: "review.created", data: { id: "rev_ops", restaurantId: "rest_9", rating: 4 } }));
  await done;
});
afterAll(async () => {
  await svc.stop();
});

describe("operator routes", () => {
  it.each(["/mirror/reviews/rev_ops", "/metrics", "/admin/queues"])("refuses %s without the admin token", async (path) => {
    const none = await fetch(`${svc.url}${path}`);
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toContain("Basic");
    const wrong = await fetch(`${svc.url}${path}`, { headers: { authorization: "Bearer not-the-token-at-all" } });
    expect(wrong.status).toBe(401);
  });

  it("reads the mirror by id and by restaurant, 404 for an unknown id", async () => {
    expect(await (await svc.admin("/mirror/reviews/rev_ops")).json()).toMatchObject({ id: "rev_ops", rating: 4 });
    expect(await (await svc.admin("/mirror/reviews?restaurantId=rest_9")).json()).toMatchObject({ data: [{ id: "rev_ops" }] });
    const missing = await svc.admin("/mirror/orders/ord_nope");
    expect(missing.status).toBe(404);
    expect(await (await svc.admin("/mirror/reviews")).json()).toMatchObject({ data: [{ id: "rev_ops" }], nextCursor: null });
    expect((await svc.admin("/mirror/widgets/x")).status).toBe(404);
  });

  it("accepts Basic auth with the token as password, as a browser sends it", async () => {
    const basic = Buffer.from(`ops:${ADMIN_TOKEN}`).toString("base64");
    const res = await fetch(`${svc.url}/mirror/reviews/rev_ops`, { headers: { authorization: `Basic ${basic}` } });
    expect(res.status).toBe(200);
  });

  it("exports Prometheus metrics about events, jobs and queues", async () => {
    await svc.deliver("{not json");
    const text = await (await svc.admin("/metrics")).text();
    expect(text).toMatch(/svc_webhook_events_received_total\{type="review.created",secret="0"\} 1/);
    expect(text).toMatch(/svc_webhook_events_rejected_total\{reason="invalid_event"\} 1/);
    expect(text).toMatch(/svc_jobs_total\{queue="events",name="review.created",outcome="completed"\} 1/);
    // Handled straight from the ingest stream: counted as the queue's jobs are, no job left behind.
    expect(text).toMatch(/svc_ingest_consumed_total 1/);
    expect(text).toMatch(/svc_queue_jobs\{queue="events",state="completed"\} 0/);
    expect(text).toMatch(/svc_mirror_last_write_age_seconds\{kind="reviews"\}/);
  });

  it("serves the queue dashboard with the token", async () => {
    const res = await svc.admin("/admin/queues");
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("svc-webhooks");
  });

  it("keeps operator routes off entirely without ADMIN_TOKEN", async () => {
    const bare = await startService({ ADMIN_TOKEN: "" });
    try {
      expect((await fetch(`${bare.url}/metrics`)).status).toBe(404);
      expect((await fetch(`${bare.url}/mirror/orders/x`)).status).toBe(404);
    } finally {
      await bare.stop();
    }
  });
});

describe("every answer", () => {
  // Last: its delivery would change what the reads above find.
  it("names the service on every answer over HTTP: a delivery, a refusal, an unknown route, a probe, the dashboard", async () => {
    const answers = [
      await svc.deliver(sampleEvent({ type: "review.created", data: { id: "rev_named", restaurantId: "rest_9", rating: 5 } })),
      await fetch(`${svc.url}/webhooks`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }),
      await fetch(`${svc.url}/no/such/route`),
      await fetch(`${svc.url}/healthz`),
      await svc.admin("/admin/queues"),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 401, 404, 200, 200]);
    for (const res of answers) expect(res.headers.get("x-served-by")).toBe("svc-webhooks");
  });
});
