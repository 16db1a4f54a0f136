import { describe, expect, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { createApp } from "../../src/http/app.js";
import { mountConsole, type ConsoleSources } from "../../src/http/console/console-routes.js";
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

describe("probes and assets in the request log", () => {
  function probedApp(level: string, ready: () => Promise<void>) {
    const logs = captureLogs();
    const logger = createLogger({ level, destination: logs.stream });
    const unused = () => Promise.reject(new Error("not read"));
    const sources = { events: { get: unused, query: unused }, records: { kinds: [] }, mirror: { kinds: [] } } as unknown as ConsoleSources;
    const app = createApp({ logger, ready, mount: (root) => mountConsole(root, { adminToken: TOKEN, sources, logger }) });
    const get = (path: string) => app.request(path, { headers: { authorization: `Bearer ${TOKEN}` } });
    return { logs, get };
  }
  const TOKEN = "admin-token-for-tests-0123456789";

  it("writes /healthz, /readyz and the console's assets at debug, so info shows none of them", async () => {
    const { logs, get } = probedApp("info", () => Promise.resolve());
    for (const path of ["/healthz", "/readyz", "/console/assets/console.css", "/console/assets/console.js"])
      expect((await get(path)).status, path).toBe(200);
    expect(logs.records().filter((r) => r.msg === "request")).toEqual([]);
    const debug = probedApp("debug", () => Promise.resolve());
    await debug.get("/healthz");
    expect(debug.logs.records().filter((r) => r.msg === "request")).toEqual([expect.objectContaining({ level: 20, path: "/healthz" })]);
  });

  it("still writes a probe that fails, and a page request, at their own levels", async () => {
    const { logs, get } = probedApp("info", () => Promise.reject(new Error("Redis away")));
    expect((await get("/readyz")).status).toBe(503);
    expect((await get("/console/assets/nothing.css")).status).toBe(404);
    expect(logs.records().filter((r) => r.msg === "request")).toEqual([
      expect.objectContaining({ level: 40, path: "/readyz", status: 503 }),
      expect.objectContaining({ level: 30, path: "/console/assets/nothing.css", status: 404 }),
    ]);
  });
});
