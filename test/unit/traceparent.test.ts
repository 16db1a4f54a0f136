import { TraceFlags } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { encodeEntry, decodeEntry } from "../../src/queue/ingest-stream.js";
import { tracingRequested } from "../../src/config/config.js";
import { formatTraceparent, parseTraceparent } from "../../src/tracing/tracing.js";

const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
const spanId = "00f067aa0ba902b7";

describe("W3C traceparent", () => {
  it("formats a sampled span context and reads it back as a remote parent", () => {
    const value = formatTraceparent({ traceId, spanId, traceFlags: TraceFlags.SAMPLED });
    expect(value).toBe(`00-${traceId}-${spanId}-01`);
    expect(parseTraceparent(value)).toEqual({ traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });
  });

  it("ignores what is not a valid version-00 traceparent (all-zero ids, wrong lengths, upper case)", () => {
    for (const bad of [
      undefined,
      "",
      "garbage",
      `00-${"0".repeat(32)}-${spanId}-01`,
      `00-${traceId}-${"0".repeat(16)}-01`,
      `00-${traceId.toUpperCase()}-${spanId}-01`,
      `01-${traceId}-${spanId}-01`,
    ])
      expect(parseTraceparent(bad)).toBeUndefined();
    expect(formatTraceparent({ traceId: "0".repeat(32), spanId, traceFlags: 1 })).toBeUndefined();
  });
});

describe("the ingest stream entry", () => {
  const event = { id: "evt_1", type: "order.created", receivedAt: "2026-01-01T00:00:00.000Z", payload: { data: { id: "ord_1" } } };

  it("holds no trace field when tracing is off, and the delivery's traceparent when on", () => {
    const json = JSON.stringify(event.payload);
    expect(encodeEntry(event, json)).not.toContain("traceparent");
    const traceparent = `00-${traceId}-${spanId}-01`;
    expect(decodeEntry(encodeEntry({ ...event, traceparent }, json))).toEqual({ ...event, traceparent });
    expect(decodeEntry(encodeEntry({ ...event, traceparent }))).toEqual({ ...event, traceparent });
  });
});

describe("tracingRequested (the standard OTEL_* environment)", () => {
  it("is on only with an OTLP endpoint, and off when the SDK or the traces exporter is disabled", () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_SERVICE_NAME: "x" })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" })).toBe(false);
  });
});
