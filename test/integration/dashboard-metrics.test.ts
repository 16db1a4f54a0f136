import { afterEach, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../helpers/stack.js";

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

/** The value of one series in Prometheus text, or undefined when it is not there. */
const valueOf = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe("/metrics: what the dashboard and the alert rules read", () => {
  it("shows the process's role, the database's health and when reconciliation last finished", async () => {
    stack = await startStack({ deliver: false, env: { RECONCILE_INTERVAL_SECONDS: "3600" } });
    const text = await (await stack.svc.admin("/metrics")).text();
    expect(valueOf(text, 'svc_role_info{role="all"}')).toBe(1);
    expect(valueOf(text, "svc_database_up")).toBe(1);
    expect(valueOf(text, "svc_database_ping_seconds")).toBeGreaterThan(0);
    // Fresh from the worker's start: "stalled" means no sweep finished for a while, not "none yet".
    const reconciled = valueOf(text, "svc_reconcile_last_success_timestamp_seconds");
    expect(reconciled).toBeGreaterThan(Date.now() / 1000 - 600);
  });
});
