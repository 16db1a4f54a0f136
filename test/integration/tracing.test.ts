import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { sampleEvent, TEST_SECRET } from "../helpers/edge.js";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../helpers/otlp-receiver.js";
import { waitFor } from "../helpers/wait-for.js";

const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;

let proc: CliProcess | undefined;
let sandbox: Sandbox | undefined;
let receiver: OtlpReceiver | undefined;
let edgeUrl: string | undefined;
afterEach(async () => {
  if (proc?.child.exitCode === null) {
    proc.child.kill("SIGTERM");
    await proc.exited;
  }
  await sandbox?.close();
  await receiver?.close();
  proc = sandbox = receiver = undefined;
});

/** A whole service (edge and worker) as a real process, syncing from the sandbox, which sends it webhooks. */
async function serveWithSandbox(env: Record<string, string>) {
  sandbox = createSandbox({ delivery: { retryDelaysMs: [50, 100, 200] } });
  const apiUrl = await sandbox.listen({ host: "127.0.0.1" });
  proc = runCli(["serve"], {
    ROLE: "all",
    PORT: "0",
    HOST: "127.0.0.1",
    REDIS_URL: inject("redisUrl"),
    QUEUE_PREFIX: `test-trace-${process.pid}-${Date.now()}`,
    SIGNING_SECRET: TEST_SECRET,
    API_BASE_URL: apiUrl,
    API_KEY: sandbox.apiKey,
    SYNC_DEBOUNCE_MS: "50",
    RECONCILE_INTERVAL_SECONDS: "0",
    LOG_LEVEL: "debug",
    ...env,
  });
  const url = await proc.listening();
  edgeUrl = url;
  sandbox.addWebhook({ url: `${url}/webhooks`, secret: TEST_SECRET });
  return sandbox;
}

/** The lines the process logged, as JSON records. */
function logLines(p: CliProcess): Record<string, unknown>[] {
  return p
    .stdout()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

// A real process (web and worker) on a machine shared with other suites: each test gets a budget
// that fits the waits inside it.
const PROCESS_TEST_MS = 90_000;

describe("tracing (OpenTelemetry, a real serve process)", () => {
  it(
    "puts one webhook's edge, handler, upstream call and mirror write in one trace, sends the API its traceparent, and logs the trace id",
    async () => {
      receiver = await startOtlpReceiver();
      const s = await serveWithSandbox({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "svc-webhooks-test",
        OTEL_BSP_SCHEDULE_DELAY: "50",
      });
      const order = s.actions.createOrder({ restaurantId: s.state.restaurants()[0]!.id, paid: true });

      // The refresh the webhook scheduled reads the orders of its restaurant, with a traceparent.
      const call = await waitFor(() => s.requestLog.find((r) => r.path === "/api/v1/orders" && r.status === 200), {
        timeoutMs: 30_000,
        what: "the refresh's upstream read",
      });
      const traceparent = call.traceparent;
      expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      const traceId = traceparent!.split("-")[1]!;

      const inTrace = (pred: (span: ReceivedSpan) => boolean) => () => receiver!.spans.find((sp) => sp.traceId === traceId && pred(sp));
      const edge = await waitFor(
        inTrace((sp) => sp.kind === SERVER && sp.name === "POST /webhooks"),
        { what: "the edge's server span" },
      );
      const handler = await waitFor(
        inTrace((sp) => sp.name === "handler sync order.created"),
        { what: "the handler's span" },
      );
      const upstream = await waitFor(
        inTrace((sp) => sp.kind === CLIENT && sp.name === "GET /api/v1/orders"),
        { what: "the upstream call's span" },
      );
      const write = await waitFor(
        inTrace((sp) => sp.name === "mirror upsert orders"),
        { what: "the mirror write's span" },
      );
      expect(write.attributes["svc.mirror.written"]).toBeGreaterThan(0);
      expect(edge.attributes["svc.event.type"]).toBe("order.created");
      expect(edge.serviceName).toBe("svc-webhooks-test");
      expect(handler.attributes["svc.event.id"]).toBe(edge.attributes["svc.event.id"]);
      // The API saw the upstream call's own span as the parent of its request.
      expect(traceparent!.split("-")[2]).toBe(upstream.spanId);
      // Every export was OTLP/HTTP JSON, as OTEL_EXPORTER_OTLP_PROTOCOL asked.
      expect(receiver.contentTypes.every((t) => t.startsWith("application/json"))).toBe(true);

      // The delivery's request line (debug) carries the trace id; so do the refresh's lines.
      // Log lines reach the pipe a little after the answers they describe.
      await waitFor(() => logLines(proc!).some((l) => l.msg === "request" && l.trace_id === traceId), {
        what: "the delivery's log line with its trace id",
      });
      const traced = logLines(proc!).filter((l) => l.trace_id === traceId);
      expect(traced.find((l) => l.msg === "request")?.eventId).toBe(edge.attributes["svc.event.id"]);
      expect(traced.every((l) => typeof l.span_id === "string")).toBe(true);
      expect(order.id).toBeTruthy();

      // A sender's traceparent (here: "not sampled") is linked, never the parent: an unauthenticated
      // header must not decide whether or where we trace.
      const senderTrace = "ab".repeat(16);
      const body = JSON.stringify(sampleEvent());
      const res = await fetch(`${edgeUrl!}/webhooks`, {
        method: "POST",
        body,
        headers: {
          "content-type": "application/json",
          "x-svc-signature": signPayload(body, TEST_SECRET),
          traceparent: `00-${senderTrace}-${"cd".repeat(8)}-00`,
        },
      });
      expect(res.status).toBe(200);
      const { id } = (await res.json()) as { id: string };
      const linked = await waitFor(() => receiver!.spans.find((sp) => sp.kind === SERVER && sp.attributes["svc.event.id"] === id), {
        what: "the edge span of a delivery that came with a traceparent",
      });
      expect(linked.traceId).not.toBe(senderTrace);
      expect(linked.parentSpanId ?? "").toBe("");
      expect(linked.links?.map((l) => l.traceId)).toEqual([senderTrace]);
    },
    PROCESS_TEST_MS,
  );

  it(
    "links the one refresh a burst of a restaurant's events shares to the trace of every event in it",
    async () => {
      receiver = await startOtlpReceiver();
      // A long debounce, so both events fall into one refresh.
      const s = await serveWithSandbox({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_BSP_SCHEDULE_DELAY: "50",
        SYNC_DEBOUNCE_MS: "3000",
      });
      const restaurantId = s.state.restaurants()[0]!.id;
      s.actions.createOrder({ restaurantId, paid: true });
      s.actions.createOrder({ restaurantId, paid: true });
      const edges = await waitFor(
        () => {
          const found = receiver!.spans.filter((sp) => sp.kind === SERVER && sp.attributes["svc.event.type"] === "order.created");
          return found.length === 2 && found;
        },
        { timeoutMs: 30_000, what: "both deliveries' edge spans" },
      );
      const refresh = await waitFor(() => receiver!.spans.find((sp) => sp.name === "refresh orders"), {
        timeoutMs: 30_000,
        what: "the refresh's span",
      });
      // The refresh runs in one event's trace and links the other's.
      const traces = edges.map((e) => e.traceId);
      expect(traces).toContain(refresh.traceId);
      const other = traces.find((t) => t !== refresh.traceId);
      expect(refresh.links?.map((l) => l.traceId)).toContain(other);
      expect(receiver.spans.filter((sp) => sp.name === "refresh orders")).toHaveLength(1);
    },
    PROCESS_TEST_MS,
  );

  it(
    "continues a webhook's trace through the refresh into the change event it causes and that event's handler",
    async () => {
      receiver = await startOtlpReceiver();
      // A user's handlers module with a change event handler (needs nothing from the package).
      const dir = mkdtempSync(join(tmpdir(), "svc-trace-changes-"));
      const handlersModule = join(dir, "handlers.mjs");
      writeFileSync(handlersModule, `export default { "change.order": () => {} };\n`);
      const s = await serveWithSandbox({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_BSP_SCHEDULE_DELAY: "50",
        HANDLERS_MODULE: handlersModule,
      });
      const order = s.actions.createOrder({ restaurantId: s.state.restaurants()[0]!.id, paid: true });
      const edge = await waitFor(
        () => receiver!.spans.find((sp) => sp.kind === SERVER && sp.attributes["svc.event.type"] === "order.created"),
        { timeoutMs: 30_000, what: "the delivery's edge span" },
      );
      const inTrace = (pred: (span: ReceivedSpan) => boolean) => () =>
        receiver!.spans.find((sp) => sp.traceId === edge.traceId && pred(sp));
      const handler = await waitFor(
        inTrace((sp) => sp.name === "handler user change.order"),
        { timeoutMs: 30_000, what: "the change event handler's span, in the webhook's trace" },
      );
      const relay = await waitFor(
        inTrace((sp) => sp.name === "change relay change.order"),
        { what: "the relay's span" },
      );
      const refresh = await waitFor(
        inTrace((sp) => sp.name === "refresh orders"),
        { what: "the refresh's span" },
      );
      // webhook → … → refresh (the write that recorded the change) → relay (producer) → handler.
      expect(relay.parentSpanId).toBe(refresh.spanId);
      expect(relay.kind).toBe(PRODUCER);
      expect(handler.parentSpanId).toBe(relay.spanId);
      expect(handler.attributes["svc.event.id"]).toBe(relay.attributes["svc.event.id"]);
      expect(String(relay.attributes["svc.event.id"])).toMatch(/^chg_/);
      // The refresh's write recorded a change for every order of the restaurant it mirrored (the
      // first read of it): each change's handler ran in the trace, under its own relay span.
      const named = (name: string) => receiver!.spans.filter((sp) => sp.traceId === edge.traceId && sp.name === name);
      await waitFor(() => named("handler user change.order").length === named("change relay change.order").length, {
        what: "a handler span for every change relayed in the trace",
      });
      const relaySpanIds = new Set(named("change relay change.order").map((sp) => sp.spanId));
      expect(named("handler user change.order").every((sp) => relaySpanIds.has(sp.parentSpanId ?? ""))).toBe(true);
      expect(order.id).toBeTruthy();
    },
    PROCESS_TEST_MS,
  );

  it(
    "sends no traceparent and logs no trace id when no OTLP endpoint is set",
    async () => {
      const s = await serveWithSandbox({});
      s.actions.createOrder({ restaurantId: s.state.restaurants()[0]!.id, paid: true });
      const call = await waitFor(() => s.requestLog.find((r) => r.path === "/api/v1/orders" && r.status === 200), {
        timeoutMs: 30_000,
        what: "the refresh's upstream read",
      });
      expect(call.traceparent).toBeNull();
      // Log lines reach the pipe a little after the answers they describe.
      await waitFor(() => logLines(proc!).some((l) => l.msg === "request" && l.eventId !== undefined), { what: "the delivery's log line" });
      const lines = logLines(proc!);
      expect(lines.some((l) => "trace_id" in l || "span_id" in l)).toBe(false);
    },
    PROCESS_TEST_MS,
  );
});
