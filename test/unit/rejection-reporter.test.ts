import pino from "pino";
import { describe, expect, it } from "vitest";
import { createRejectionReporter } from "../../src/mirror/set-aside-records.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { captureLogs } from "../helpers/log-capture.js";

describe("reporting records the mirror refused", () => {
  it("logs one warning per record, id shortened and no values, and counts by kind and reason", async () => {
    const logs = captureLogs();
    const metrics = createMetrics();
    const report = createRejectionReporter({ logger: pino({ level: "info" }, logs.stream), counter: metrics.mirrorRejected });
    const hugeId = `ord_${"x".repeat(1_000_000)}\u0000`;
    report([
      { kind: "orders", id: hugeId, reason: "too_long", field: "id", message: "orders record …: field id must be short" },
      { kind: "bookings", id: "bkg_1", reason: "nul_character", field: "diner.name", message: "bookings record: field diner.name" },
      { kind: "bookings", id: undefined, reason: "invalid_field", field: "id", message: "bookings record (no id): field id" },
    ]);
    const records = logs.records();
    expect(records).toHaveLength(3);
    expect(records[1]).toMatchObject({ level: 40, kind: "bookings", id: "bkg_1", reason: "nul_character", field: "diner.name" });
    expect(records[2]).toMatchObject({ id: null, reason: "invalid_field" });
    expect((records[0]!.id as string).length).toBeLessThan(300);
    expect(logs.text().length).toBeLessThan(3000);
    const body = (await metrics.render()).body;
    expect(body).toContain('svc_mirror_rejected_records_total{kind="orders",reason="too_long"} 1');
    expect(body).toContain('svc_mirror_rejected_records_total{kind="bookings",reason="nul_character"} 1');
    expect(body).toContain('svc_mirror_rejected_records_total{kind="bookings",reason="invalid_field"} 1');
  });
});
