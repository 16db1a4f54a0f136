import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { createApp } from "../../src/http/app.js";
import { QueueUnavailableError } from "../../src/queue/errors.js";

describe("the edge's 5xx hook (svc_http_server_errors_total)", () => {
  it("reports the status of every 5xx answer, and nothing for a refusal of the sender's fault", async () => {
    const statuses: number[] = [];
    const app = createApp({
      logger: pino({ level: "silent" }),
      ready: () => Promise.resolve(),
      onServerError: (status) => statuses.push(status),
      webhooks: {
        sink: { enqueue: () => Promise.reject(new QueueUnavailableError("enqueue timed out")), ping: () => Promise.resolve() },
        signingSecrets: ["whsec_unit_primary"],
        maxBodyBytes: 1024,
      },
    });
    const body = JSON.stringify({ id: "evt_1", type: "order.created", data: { id: "ord_1", restaurantId: "rest_1" } });
    const refused = await app.request("/webhooks", {
      method: "POST",
      body,
      headers: { "content-type": "application/json", "x-svc-signature": "v1=00" },
    });
    expect(refused.status).toBe(401);
    const failed = await app.request("/webhooks", {
      method: "POST",
      body,
      headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, "whsec_unit_primary") },
    });
    expect(failed.status).toBe(503);
    expect(statuses).toEqual([503]);
  });
});
