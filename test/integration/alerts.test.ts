import { randomBytes, randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { type AlertSettings, createAlerts, type AlertsOptions } from "../../src/alerts/alerts.js";
import type { ProblemTransition } from "../../src/problems/problem.js";
import { createRedisConnection, type RedisClient } from "../../src/redis/redis.js";
import { captureLogs } from "../helpers/log-capture.js";
import { cli } from "../helpers/cli-main.js";
import { waitFor } from "../helpers/wait-for.js";
import { receiver } from "../helpers/alert-receiver.js";

const SECRET = `whsec_${randomBytes(32).toString("base64")}`;

let n = 0;
/** A transition of a problem, a new one each call unless `id` repeats one. */
function transition(overrides: { account?: string | null; type?: ProblemTransition["type"]; id?: string } = {}): ProblemTransition {
  const at = "2026-12-02T04:00:00.000Z";
  const problemId = `prb_${++n}`;
  return {
    id: overrides.id ?? `tr_${randomUUID()}`,
    type: overrides.type ?? "problem.opened",
    problem: {
      id: problemId,
      account: overrides.account === undefined ? null : overrides.account,
      kind: "key_refused",
      subject: "api.example.com",
      state: overrides.type === "problem.resolved" ? "resolved" : "open",
      openedAt: at,
      resolvedAt: overrides.type === "problem.resolved" ? "2026-12-02T04:05:00.000Z" : null,
      lastSeenAt: at,
      count: 3,
      cause: "GET /api/v1/orders answered 401 <Unauthorized>",
    },
  };
}

describe("problem notifications (alerts queue, local receivers, real Redis)", () => {
  let queueConnection: RedisClient;
  let workerConnection: RedisClient;
  const open: { close(): Promise<unknown> }[] = [];
  beforeAll(() => {
    queueConnection = createRedisConnection(inject("redisUrl"), "worker");
    workerConnection = createRedisConnection(inject("redisUrl"), "worker");
  });
  afterEach(async () => {
    for (const part of open.splice(0).reverse()) await part.close();
  });
  afterAll(() => {
    queueConnection.disconnect();
    workerConnection.disconnect();
  });

  /** Alerts on a fresh prefix; `run` starts a delivery worker. */
  function alertsOf(settings: Partial<AlertSettings>, extra: Partial<AlertsOptions> & { prefix?: string; run?: boolean } = {}) {
    const logs = captureLogs();
    const alerts = createAlerts({
      connection: queueConnection,
      prefix: extra.prefix ?? `test-alerts-${randomUUID().slice(0, 8)}`,
      settings: { format: "standard", signingSecret: SECRET, ...settings },
      alertUrlOf: () => undefined,
      logger: pino({ level: "debug" }, logs.stream),
      enqueueTimeoutMs: 5000,
      backoffMs: 1,
      attempts: 3,
      ...extra,
    });
    open.push(alerts.queue);
    const worker = alerts.deliveryWorker(workerConnection);
    open.push({ close: () => worker.close() });
    if (extra.run !== false) void worker.run();
    /** Resolves once the queue holds nothing waiting, delayed or active, and `completed` jobs are done. */
    const settled = (completed: number) =>
      waitFor(
        async () => {
          const counts = await alerts.queue.getJobCounts("waiting", "delayed", "active", "completed", "prioritized");
          return (
            counts.waiting === 0 &&
            counts.delayed === 0 &&
            counts.active === 0 &&
            counts.prioritized === 0 &&
            counts.completed === completed
          );
        },
        { what: `${completed} completed notifications` },
      );
    return { alerts, worker, logs, settled };
  }

  async function receiverOpen(path?: string) {
    const r = await receiver(path);
    open.push(r);
    return r;
  }

  it("POSTs one notification per transition, signed so the standardwebhooks library verifies it", async () => {
    const r = await receiverOpen();
    const { alerts, settled } = alertsOf({ webhookUrl: r.url });
    const opened = transition();
    const resolved = transition({ type: "problem.resolved" });
    await alerts.announce(opened);
    await alerts.announce(resolved);
    await settled(2);
    expect(r.got).toHaveLength(2);
    const verifier = new Webhook(SECRET);
    const byId = new Map(r.got.map((g) => [g.headers["webhook-id"], g]));
    for (const t of [opened, resolved]) {
      const got = byId.get(t.id);
      expect(got?.path).toBe("/hooks/T000/s3cr3t-token?key=q-secret");
      const headers = got?.headers as Record<string, string>;
      expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      expect(verifier.verify(got?.body ?? "", headers)).toEqual({ type: t.type, data: t.problem });
    }
    // Signed with another secret, it would not verify.
    const got = r.got[0];
    expect(() =>
      new Webhook(`whsec_${randomBytes(32).toString("base64")}`).verify(got?.body ?? "", got?.headers as Record<string, string>),
    ).toThrow();
  });

  it("retries a 500 with the same webhook-id, each failure one warn line naming the host and never the path or query", async () => {
    const r = await receiverOpen();
    r.answers.push(500, 503);
    const { alerts, settled, logs } = alertsOf({ webhookUrl: r.url });
    const t = transition();
    await alerts.announce(t);
    await settled(1);
    expect(r.got.map((g) => g.headers["webhook-id"])).toEqual([t.id, t.id, t.id]);
    const verifier = new Webhook(SECRET);
    for (const g of r.got) expect(verifier.verify(g.body, g.headers as Record<string, string>)).toEqual({ type: t.type, data: t.problem });
    const warns = logs.records().filter((l) => l.level === 40);
    expect(warns.map((w) => [w.status, w.attempt, w.destination])).toEqual([
      [500, "1 of 3", new URL(r.url).host],
      [503, "2 of 3", new URL(r.url).host],
    ]);
    expect(logs.text()).not.toContain("s3cr3t-token");
    expect(logs.text()).not.toContain("q-secret");
    expect(logs.text()).not.toContain(SECRET);
  });

  it("gives up after the last attempt with one error line, the job kept as failed", async () => {
    const r = await receiverOpen();
    r.answers.push(500, 500, 500);
    const { alerts, logs } = alertsOf({ webhookUrl: r.url });
    await alerts.announce(transition());
    await waitFor(async () => (await alerts.queue.getJobCounts("failed")).failed === 1, { what: "the notification given up" });
    expect(r.got).toHaveLength(3);
    const errors = logs.records().filter((l) => l.level === 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ status: 500, attempt: "3 of 3", destination: new URL(r.url).host });
    expect(String(errors[0]?.msg)).toContain("given up after 3 attempts");
  });

  it("announcing one transition twice (even at once) sends it once", async () => {
    const r = await receiverOpen();
    const { alerts, settled } = alertsOf({ webhookUrl: r.url });
    const t = transition();
    await Promise.all([alerts.announce(t), alerts.announce(t)]);
    await settled(1);
    await alerts.announce(t);
    const other = transition();
    await alerts.announce(other);
    await settled(2);
    expect(r.got.map((g) => g.headers["webhook-id"]).sort()).toEqual([t.id, other.id].sort());
  });

  it("a destination that hangs delays neither another destination nor the caller of announce", async () => {
    const hanging = await receiverOpen();
    const other = await receiverOpen("/acme");
    hanging.answers.push("hang", "hang");
    const { alerts, settled } = alertsOf(
      { webhookUrl: hanging.url },
      { alertUrlOf: (account) => (account === "acme" ? other.url : undefined), timeoutMs: 60_000 },
    );
    await alerts.announce(transition({ account: "acme" }));
    await waitFor(() => hanging.held === 1 && other.got.length === 1, { what: "the hanging destination holding, the other answered" });
    // With the first POST still held, a second transition is queued and the other destination gets it too.
    await alerts.announce(transition({ account: "acme" }));
    await waitFor(() => other.got.length === 2, { what: "the second notification at the destination that answers" });
    expect(hanging.held).toBe(2);
    hanging.release();
    await settled(4);
  });

  it("a notification queued while no worker runs is delivered once by the next worker, a pending retry too", async () => {
    const r = await receiverOpen();
    const prefix = `test-alerts-${randomUUID().slice(0, 8)}`;
    const first = alertsOf({ webhookUrl: r.url }, { prefix, run: false });
    const pending = transition();
    await first.alerts.announce(pending);
    await first.worker.close();
    await first.alerts.queue.close();
    const next = alertsOf({ webhookUrl: r.url }, { prefix });
    await next.settled(1);
    expect(r.got.map((g) => g.headers["webhook-id"])).toEqual([pending.id]);

    // A retry waiting when its worker stops: the next worker sends it, once more only.
    r.answers.push(500);
    const retried = alertsOf({ webhookUrl: r.url }, { prefix, backoffMs: 200 });
    await next.worker.close();
    const t = transition();
    await retried.alerts.announce(t);
    await waitFor(async () => (await retried.alerts.queue.getJobCounts("delayed")).delayed === 1, { what: "the retry waiting" });
    await retried.worker.close();
    const after = alertsOf({ webhookUrl: r.url }, { prefix });
    await after.settled(2);
    expect(r.got.map((g) => g.headers["webhook-id"])).toEqual([pending.id, t.id, t.id]);
  });

  it("with ALERT_FORMAT=slack the body is Slack's incoming-webhook text: the kind in words, account, cause and since", async () => {
    const r = await receiverOpen();
    const { alerts, settled } = alertsOf({ webhookUrl: r.url, format: "slack" });
    await alerts.announce(transition({ account: "acme" }));
    await alerts.announce(transition({ account: "acme", type: "problem.resolved" }));
    // Each to the deployment's URL, and to acme's own, which it has none of.
    await settled(4);
    const texts = r.got.map((g) => JSON.parse(g.body) as Record<string, unknown>);
    for (const body of texts) expect(Object.keys(body)).toEqual(["text"]);
    expect(texts.map((t) => t.text).sort()).toEqual([
      "Problem opened: the API refuses the account's key for account acme (api.example.com), since 2026-12-02T04:00:00.000Z. Cause: GET /api/v1/orders answered 401 &lt;Unauthorized&gt;",
      "Problem resolved: the API refuses the account's key for account acme (api.example.com), open from 2026-12-02T04:00:00.000Z to 2026-12-02T04:05:00.000Z, seen 3 times. Cause: GET /api/v1/orders answered 401 &lt;Unauthorized&gt;",
    ]);
  });

  it("an account's own alertUrl gets only that account's transitions; the deployment's URL gets every one", async () => {
    const deployment = await receiverOpen("/all");
    const acme = await receiverOpen("/acme");
    const { alerts, settled } = alertsOf({ webhookUrl: deployment.url }, { alertUrlOf: (a) => (a === "acme" ? acme.url : undefined) });
    const ofAcme = transition({ account: "acme" });
    const ofGlobex = transition({ account: "globex" });
    const ofDeployment = transition({ account: null });
    const ofDefault = transition({ account: "default" });
    for (const t of [ofAcme, ofGlobex, ofDeployment, ofDefault]) await alerts.announce(t);
    // Four to the deployment's URL, one to acme's; globex's job finds no URL and ends; default's is never queued.
    await settled(6);
    expect(deployment.got.map((g) => g.headers["webhook-id"]).sort()).toEqual(
      [ofAcme.id, ofGlobex.id, ofDeployment.id, ofDefault.id].sort(),
    );
    expect(acme.got.map((g) => g.headers["webhook-id"])).toEqual([ofAcme.id]);
  });
});

describe("svc-webhooks alerts test", () => {
  it("sends one signed test notification and says the destination's answer in one sentence", async () => {
    const r = await receiver("/hook?token=abc");
    try {
      const { code, stdout, stderr } = await cli(["alerts", "test"], { ALERT_WEBHOOK_URL: r.url, ALERT_SIGNING_SECRET: SECRET });
      expect(stderr).toBe("");
      expect(code).toBe(0);
      expect(r.got).toHaveLength(1);
      const got = r.got[0];
      const body = new Webhook(SECRET).verify(got?.body ?? "", got?.headers as Record<string, string>) as Record<string, unknown>;
      expect(body).toMatchObject({ type: "problem.opened", test: true, data: { subject: "alerts test", account: null } });
      const id = String(got?.headers["webhook-id"]);
      expect(stdout).toBe(`test notification ${id} (problem.opened) delivered: ${new URL(r.url).host} answered 200 OK: ok`);
      expect(stdout).not.toContain("token=abc");
    } finally {
      await r.close();
    }
  });

  it("says in one line that nothing answered when the connection is refused, exit 1, never the secret or the URL's query", async () => {
    // A port that was free a moment ago and is closed now.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const { code, stdout, stderr } = await cli(["alerts", "test"], {
      ALERT_WEBHOOK_URL: `http://127.0.0.1:${port}/hook?token=abc`,
      ALERT_SIGNING_SECRET: SECRET,
    });
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toBe(`svc-webhooks: the test notification was not delivered: 127.0.0.1:${port} did not answer: ECONNREFUSED`);
    expect(stderr).not.toContain(SECRET);
  });

  it("refuses in one line when ALERT_WEBHOOK_URL is not set", async () => {
    const { code, stderr } = await cli(["alerts", "test"], {});
    expect(code).toBe(2);
    expect(stderr).toBe("svc-webhooks: ALERT_WEBHOOK_URL is not set: there is nowhere to send a test notification");
  });
});
