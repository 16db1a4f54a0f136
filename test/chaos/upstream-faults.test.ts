import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, inject, it } from "vitest";
import { EVENTS_QUEUE, SYNC_QUEUE } from "../../src/queue/events-queue.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { inspectQueues } from "../helpers/inspect-queues.js";
import { waitForQueuesIdle } from "../helpers/queues-idle.js";
import { sendAll } from "./retrying-sender.js";

const SECRET = "whsec_chaos_upstream_88d1";
const RATE = { max: 20, windowMs: 2000 };
// The production default margin: what absorbs the jitter between taking a slot (Redis clock) and
// the request's arrival, which a cold tsx process can stretch past 100 ms.
const SAFETY_MS = 1000;
const RETRY_AFTER_S = 1;
let sandbox: Sandbox | undefined;
const procs: CliProcess[] = [];
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill("SIGKILL");
  await sandbox?.close();
});

describe("upstream faults with two workers sharing one key", () => {
  it("sends nothing inside a Retry-After, never exceeds the rate, and finishes or dead-letters every job", async () => {
    sandbox = createSandbox({ restaurants: 6, rateLimit: RATE });
    const apiUrl = await sandbox.listen();
    // 5xx now and then, answers slower than the client's timeout, and a storm of 429s.
    sandbox.faults.add({ method: "GET", path: "/api/v1/orders", status: 503, after: 2, times: 3 });
    sandbox.faults.add({ method: "GET", path: "/api/v1/bookings", delayMs: 1500, times: 2 });
    // The storm starts once the processes are warm (their first reads done), so it measures the
    // steady state; early enough to be met, as the whole run makes only ~45 requests.
    sandbox.faults.add({ method: "GET", path: "/api/v1/", status: 429, retryAfterSeconds: RETRY_AFTER_S, after: 12, times: 8 });
    sandbox.faults.add({ method: "GET", path: "/api/v1/menu-items", status: 500 }); // a permanent outage: those jobs end dead-lettered

    const prefix = `chaos-up-${randomUUID().slice(0, 6)}`;
    const env = {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: prefix,
      SIGNING_SECRET: SECRET,
      PORT: "0",
      API_BASE_URL: apiUrl,
      API_KEY: sandbox.apiKey,
      API_RATE: String(RATE.max),
      API_RATE_WINDOW_SECONDS: String(RATE.windowMs / 1000),
      API_RATE_SAFETY_MS: String(SAFETY_MS),
      API_TIMEOUT_MS: "500",
      JOB_ATTEMPTS: "4",
      JOB_BACKOFF_MS: "200",
      SYNC_DEBOUNCE_MS: "200",
      RECONCILE_INTERVAL_SECONDS: "0",
    };
    const start = async (role: string) => {
      const p = runCli(["serve", "--role", role], env);
      procs.push(p);
      return p.listening();
    };
    const web = await start("web");
    await start("worker");
    await start("worker");

    const orders = sandbox.state.orders();
    const bookings = sandbox.state.bookings();
    const items = sandbox.state.menuItems();
    const events = Array.from({ length: 300 }, (_, i) => {
      const id = `evt_up_${i}`;
      const pick =
        i % 3 === 0
          ? { type: "booking.status_changed", r: bookings[i % bookings.length]! }
          : i % 7 === 0
            ? { type: "menu_item.updated", r: items[i % items.length]! }
            : { type: "order.status_changed", r: orders[i % orders.length]! };
      return { id, body: JSON.stringify({ id, type: pick.type, data: { id: pick.r.id, restaurantId: pick.r.restaurantId } }) };
    });
    const report = await sendAll(`${web}/webhooks`, events, SECRET, { concurrency: 20, deadlineMs: 60_000 });
    expect(report.accepted.size).toBe(events.length);

    const inspected = inspectQueues(inject("redisUrl"), prefix, [EVENTS_QUEUE, SYNC_QUEUE]);
    const { queues } = inspected;
    try {
      await waitForQueuesIdle(queues, { timeoutMs: 240_000, intervalMs: 500, what: "both queues to settle" });
      const failed = [...(await queues[0]!.getFailed(0, -1)), ...(await queues[1]!.getFailed(0, -1))];
      for (const job of failed) expect(job.failedReason, `job ${job.id}`).toMatch(/\S/);
      const failedReasons = [...new Set(failed.map((j) => j.failedReason.replace(/\d+/g, "#")))];

      // The sandbox saw every request; from them: no window over the rate, nothing inside a Retry-After.
      const log = sandbox.requestLog;
      // Every request counts against the budget, whatever it was answered.
      const arrivals = log.map((r) => r.at).sort((a, b) => a - b);
      let worstWindow = 0;
      for (let i = 0, j = 0; i < arrivals.length; i++) {
        while (arrivals[i]! - arrivals[j]! >= RATE.windowMs) j++;
        worstWindow = Math.max(worstWindow, i - j + 1);
      }
      const limited = log.filter((r) => r.status === 429);
      // A request already on the wire when the 429 was sent may still land just after it.
      const inFlightGraceMs = 50;
      const insidePause = limited.flatMap((l) =>
        log
          .filter((r) => r.at > l.at + inFlightGraceMs && r.at < l.at + RETRY_AFTER_S * 1000)
          .map((r) => ({ path: r.path, status: r.status, msAfter429: r.at - l.at })),
      );
      console.log(
        `CHAOS upstream-faults ${JSON.stringify({ events: events.length, apiRequests: log.length, rateLimited: limited.length, worstWindow, rate: RATE, requestsInsideRetryAfter: insidePause.length, failedJobs: failed.length, failedReasons })}`,
      );
      expect(limited.length).toBeGreaterThanOrEqual(8); // the whole injected storm was met
      expect(worstWindow).toBeLessThanOrEqual(RATE.max);
      expect(insidePause).toEqual([]);
      // Menu refreshes met a permanent 500: they ended dead-lettered, with their reason.
      expect(failed.some((j) => j.failedReason.includes("500"))).toBe(true);
      // Every failure was logged, and no line of the three processes carries a secret.
      const output = procs.map((p) => p.stdout() + p.stderr()).join("\n");
      expect(output).toContain("job failed for good");
      for (const secret of [SECRET, sandbox.apiKey]) expect(output).not.toContain(secret);
    } finally {
      await inspected.close();
    }
  });
});
