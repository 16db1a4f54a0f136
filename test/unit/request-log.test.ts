import { describe, expect, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { createApp } from "../../src/http/app.js";
import { createLogger } from "../../src/logging/logger.js";
import type { EventSink } from "../../src/queue/ingest-stream.js";
import { captureLogs } from "../helpers/log-capture.js";

const SECRET = "whsec_request_log";
const sink: EventSink = { enqueue: () => Promise.resolve({ jobId: "1", duplicate: false }), ping: () => Promise.resolve() };

function appAt(level: string) {
  const logs = captureLogs();
  const refused: string[] = [];
  const app = createApp({
    logger: createLogger({ level, destination: logs.stream }),
    ready: () => Promise.resolve(),
    webhooks: { sink, signingSecrets: [SECRET], maxBodyBytes: 1024, observer: { rejected: (reason) => void refused.push(reason) } },
  });
  const post = (body: string, signature: string, contentType = "application/json") =>
    app.request("/webhooks", { method: "POST", body, headers: { "content-type": contentType, "x-svc-signature": signature } });
  return { logs, post, refused };
}

describe("the request log", () => {
  const body = JSON.stringify({ id: "evt_log_1", type: "order.created" });

  it("at info, writes refusals but not accepted deliveries", async () => {
    const { logs, post } = appAt("info");
    expect((await post(body, signPayload(body, SECRET))).status).toBe(200);
    expect((await post(body, signPayload(body, "whsec_other"))).status).toBe(401);
    expect(logs.records().filter((r) => r.msg === "request")).toEqual([expect.objectContaining({ level: 30, status: 401 })]);
  });

  it("writes one line for a body that is not JSON, and counts it under its reason", async () => {
    const { logs, post, refused } = appAt("info");
    expect((await post(body, signPayload(body, SECRET), "text/plain")).status).toBe(415);
    expect(logs.records().filter((r) => r.msg === "request")).toEqual([expect.objectContaining({ level: 30, status: 415 })]);
    expect(logs.records()).toHaveLength(1);
    expect(refused).toEqual(["unsupported_media_type"]);
  });

  it("at debug, writes accepted deliveries too, with their event", async () => {
    const { logs, post } = appAt("debug");
    await post(body, signPayload(body, SECRET));
    expect(logs.records().filter((r) => r.msg === "request")).toEqual([
      expect.objectContaining({ level: 20, status: 200, eventId: "evt_log_1", eventType: "order.created", duplicate: false }),
    ]);
  });
});
