import { randomBytes } from "node:crypto";
import type { ProblemKind } from "../src/problems/problem.js";
import type { FaultRule } from "../src/sandbox/app.js";
import { receiver } from "../test/helpers/alert-receiver.js";
import { waitFor } from "../test/helpers/wait-for.js";
import { importHistory, startCompany, startService, type Company, type SyncBenchTargets } from "./sync.js";

// Issue 53's figure: how long an operator waits to be told. The service runs with its defaults
// (the active tier every 120 s, the full tier hourly) and no webhook traffic, so nothing but its
// own schedule calls the API; the sandbox then fails (every call 503, or this key refused with
// 401) and later recovers. Each row times the notification from the fault's start and from the
// first call that met it, and the resolution from the recovery and from the first good call.

/** The history the company starts with: small, so the import is quick; the figures do not depend on it. */
const HISTORY_ORDERS = 2_000;
/** How long a row waits for a notification: the active interval twice over, and the retries. */
const WAIT_MS = 6 * 60_000;

export interface AlertTimingRow {
  fault: string;
  kind: ProblemKind;
  /** Seconds from the fault's start to the problem.opened POST (the schedule's wait included). */
  openedAfterFault: number;
  /** Seconds from the first API call that met the fault to that POST: the service's own delay. */
  openedAfterFirstCall: number;
  /** Seconds from the recovery to the problem.resolved POST. */
  resolvedAfterRecovery: number;
  /** Seconds from the first good call after the recovery to that POST. */
  resolvedAfterFirstGoodCall: number;
  /** Notifications received for the problem: one opened and one resolved is right. */
  notifications: number;
}

interface Scenario {
  fault: string;
  kind: ProblemKind;
  rule: (c: Company) => FaultRule;
  /** The status the fault answers, to find the first call that met it. */
  status: number;
}

const SCENARIOS: readonly Scenario[] = [
  { fault: "the API down (every call 503)", kind: "upstream_unreachable", rule: () => ({ path: "/api/v1", status: 503 }), status: 503 },
  {
    fault: "the key refused (401 for this key)",
    kind: "key_refused",
    rule: (c) => ({ path: "/api/v1", status: 401, apiKey: c.sandbox.apiKey }),
    status: 401,
  },
];

interface Notification {
  type: string;
  data: { id: string; kind: string };
}

export async function benchAlerts(t: SyncBenchTargets, log: (line: string) => void): Promise<AlertTimingRow[]> {
  const c = await startCompany(HISTORY_ORDERS, 41, 30);
  const rx = await receiver("/alerts");
  const notes = () => rx.got.map((g) => ({ at: g.at, ...(JSON.parse(g.body) as Notification) }));
  try {
    await importHistory(c, t);
    const svc = await startService(c, t, {
      ALERT_WEBHOOK_URL: rx.url,
      ALERT_SIGNING_SECRET: `whsec_${randomBytes(24).toString("base64")}`,
    });
    try {
      const rows: AlertTimingRow[] = [];
      for (const s of SCENARIOS) {
        log(`alerts: ${s.fault}`);
        rows.push(await timeScenario(c, s, notes));
      }
      return rows;
    } finally {
      await svc.stop();
    }
  } finally {
    await rx.close();
    await c.sandbox.close();
  }
}

/** No call for this long: the service's start (its first passes) is over, and it waits for its schedule. */
const QUIET_MS = 5_000;

async function timeScenario(c: Company, s: Scenario, notes: () => (Notification & { at: number })[]): Promise<AlertTimingRow> {
  const calls = c.sandbox.requestLog;
  // The fault starts while nothing calls, as an outage meets an idle service: at a moment of its schedule.
  await waitFor(() => Date.now() - (calls.at(-1)?.at ?? 0) > QUIET_MS, { timeoutMs: WAIT_MS, what: "a quiet moment", intervalMs: 200 });
  const fromNote = notes().length;
  const fromCall = calls.length;
  const faultAt = Date.now();
  c.sandbox.faults.add(s.rule(c));
  const opened = await waitFor(
    () =>
      notes()
        .slice(fromNote)
        .find((n) => n.type === "problem.opened" && n.data.kind === s.kind),
    {
      timeoutMs: WAIT_MS,
      what: `a problem.opened of ${s.kind}`,
    },
  );
  const firstFaulted = calls.slice(fromCall).find((r) => r.status === s.status);
  const recoveredAt = Date.now();
  const fromGood = calls.length;
  c.sandbox.faults.clear();
  const resolved = await waitFor(() => notes().find((n) => n.type === "problem.resolved" && n.data.id === opened.data.id), {
    timeoutMs: WAIT_MS,
    what: `the problem.resolved of ${s.kind}`,
  });
  const firstGood = calls.slice(fromGood).find((r) => r.status === 200);
  const seconds = (from: number | undefined, to: number) => (from === undefined ? NaN : (to - from) / 1000);
  return {
    fault: s.fault,
    kind: s.kind,
    openedAfterFault: seconds(faultAt, opened.at),
    openedAfterFirstCall: seconds(firstFaulted?.at, opened.at),
    resolvedAfterRecovery: seconds(recoveredAt, resolved.at),
    resolvedAfterFirstGoodCall: seconds(firstGood?.at, resolved.at),
    notifications: notes().filter((n) => n.data.id === opened.data.id).length,
  };
}

export function alertsReport(rows: readonly AlertTimingRow[], fmt: (n: number, digits?: number) => string): string[] {
  return [
    `The service with its defaults (active reconciliation every 120 s, full hourly) and no webhook traffic, ${HISTORY_ORDERS.toLocaleString("en-US")} orders imported; the sandbox fails, then recovers. Seconds until the notification reached ALERT_WEBHOOK_URL (target: within 30 s of the first call that meets the fault, and of the first that succeeds again).`,
    "",
    "| fault | problem | opened: after the fault | after the first call meeting it | resolved: after the recovery | after the first good call | notifications |",
    "|---|---|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.fault} | \`${r.kind}\` | ${fmt(r.openedAfterFault, 1)} | **${fmt(r.openedAfterFirstCall, 1)}** | ${fmt(r.resolvedAfterRecovery, 1)} | **${fmt(r.resolvedAfterFirstGoodCall, 1)}** | ${r.notifications} |`,
    ),
    "",
    "The wait after the fault's start is the schedule's (no call, no news): with no webhook traffic the next call is the active tier's, up to 120 s later.",
  ];
}
