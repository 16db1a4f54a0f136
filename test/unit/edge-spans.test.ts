import { tracing } from "@opentelemetry/sdk-node";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { createApp } from "../../src/http/app.js";
import type { EventSink } from "../../src/queue/ingest-stream.js";

// The edge's SERVER span is the root of a delivery's trace: every webhook route gets one, the
// default account's and each registered account's. Real OpenTelemetry SDK, spans kept in memory.
const SECRET = "whsec_unit_spans";
const sink: EventSink = { enqueue: () => Promise.resolve({ jobId: "job-1", duplicate: false }), ping: () => Promise.resolve() };

function tracedApp() {
  const exporter = new tracing.InMemorySpanExporter();
  const provider = new tracing.BasicTracerProvider({ spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
  const app = createApp({
    logger: pino({ level: "silent" }),
    ready: () => Promise.resolve(),
    tracer: provider.getTracer("test"),
    webhooks: {
      sink,
      signingSecrets: [SECRET],
      maxBodyBytes: 4096,
      accounts: { get: (id) => (id === "acme" ? { signingSecrets: [SECRET] } : undefined) },
    },
  });
  return { app, spans: () => exporter.getFinishedSpans() };
}

const deliver = (app: ReturnType<typeof tracedApp>["app"], path: string, id: string) => {
  const body = JSON.stringify({
    id,
    type: "order.created",
    createdAt: "2026-11-23T10:00:00Z",
    data: { id: "ord_1", restaurantId: "rest_1" },
  });
  return app.request(path, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, SECRET) },
  });
};

describe("the edge's server span", () => {
  it("wraps a delivery to the default endpoint and to a registered account's, each named by its route", async () => {
    const { app, spans } = tracedApp();
    expect((await deliver(app, "/webhooks", "evt_default")).status).toBe(200);
    expect((await deliver(app, "/webhooks/acme", "evt_acme")).status).toBe(200);
    const byEvent = new Map(spans().map((s) => [s.attributes["svc.event.id"], s]));
    expect(byEvent.get("evt_default")?.name).toBe("POST /webhooks");
    expect(byEvent.get("evt_acme")?.name).toBe("POST /webhooks/:account");
    expect(byEvent.get("evt_acme")?.attributes["http.route"]).toBe("/webhooks/:account");
    expect(byEvent.get("evt_acme")?.attributes["http.response.status_code"]).toBe(200);
  });

  it("names an unknown account's refusal by the route, never the raw path", async () => {
    const { app, spans } = tracedApp();
    expect((await deliver(app, "/webhooks/nobody", "evt_x")).status).toBe(404);
    expect(spans().map((s) => s.name)).toEqual(["POST /webhooks/:account"]);
  });
});
