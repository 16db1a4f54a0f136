import { describe, expect, it } from "vitest";
import { checkRefund, checkStatusMove, SandboxError, type OrderStatus } from "../../src/sandbox/records.js";

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (err instanceof SandboxError) return `${err.status} ${err.code}`;
    throw err;
  }
  return "allowed";
};

describe("order state machine (docs/upstream.md)", () => {
  it.each([
    ["PENDING", "CONFIRMED"],
    ["CONFIRMED", "PREPARING"],
    ["PREPARING", "READY"],
    ["READY", "DELIVERED"],
    ["PENDING", "CANCELLED"],
    ["CONFIRMED", "CANCELLED"],
    ["PREPARING", "CANCELLED"],
    ["READY", "CANCELLED"],
  ])("allows %s → %s", (from, to) => {
    expect(checkStatusMove(from as OrderStatus, to)).toBe(to);
  });

  it.each([
    ["PENDING", "PREPARING", "409 invalid_transition"], // skip
    ["READY", "CONFIRMED", "409 invalid_transition"], // backward
    ["CONFIRMED", "CONFIRMED", "409 invalid_transition"], // same
    ["DELIVERED", "CANCELLED", "409 invalid_transition"], // from terminal
    ["CANCELLED", "CONFIRMED", "409 invalid_transition"],
    ["REFUNDED", "CANCELLED", "409 invalid_transition"],
    ["PAID", "REFUNDED", "400 invalid_request"], // REFUNDED only via refund
    ["PENDING", "PENDING", "400 invalid_request"],
    ["PENDING", "shipped", "400 invalid_request"],
  ])("refuses %s → %s with %s", (from, to, expected) => {
    expect(refusal(() => checkStatusMove(from as OrderStatus, to))).toBe(expected);
  });

  it("refunds paid orders in any state but REFUNDED, never unpaid ones", () => {
    expect(refusal(() => checkRefund({ paidAt: "2026-01-01T00:00:00Z", status: "DELIVERED" }))).toBe("allowed");
    expect(refusal(() => checkRefund({ paidAt: "2026-01-01T00:00:00Z", status: "CANCELLED" }))).toBe("allowed");
    expect(refusal(() => checkRefund({ paidAt: null, status: "DELIVERED" }))).toBe("409 not_refundable");
    expect(refusal(() => checkRefund({ paidAt: "2026-01-01T00:00:00Z", status: "REFUNDED" }))).toBe("409 not_refundable");
  });
});
