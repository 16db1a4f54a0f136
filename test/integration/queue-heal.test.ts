import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createJobRestorer } from "../../src/queue/events-queue.js";
import { sampleEvent } from "../helpers/edge.js";
import { moduleHandlers } from "../helpers/module-handlers.js";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { signPayload } from "../../src/events/envelope.js";
import { waitFor } from "../helpers/wait-for.js";

// Queue state heals from the event log: events waiting for a retry whose jobs Redis lost are
// enqueued again under their own job ids. This file owns a Redis it can empty under a running worker.

const EVENTS = 5;
const ACME_SECRET = "whsec_heal_acme_secret_0123";
/** The first retry comes 10–20 s after the first attempt (jitter): long after the test empties Redis. */
const BACKOFF_MS = "20000";

let redis: RedisServer;
let svc: TestService;
/** Each attempt the handlers saw, by event id. */
const seen = new Map<string, number[]>();

beforeAll(async () => {
  redis = await startRedisServer();
  const note = (id: string, attempt: number) => seen.set(id, [...(seen.get(id) ?? []), attempt]);
  svc = await startService(
    {
      REDIS_URL: redis.url,
      JOB_ATTEMPTS: "5",
      JOB_BACKOFF_MS: BACKOFF_MS,
      SYNC_WATCH_INTERVAL_SECONDS: "1",
      SECRETS_KEY: randomBytes(32).toString("hex"),
    },
    [
      moduleHandlers({
        // Fails its first attempt, succeeds on any later one.
        "heal.later": (event, ctx) => {
          note(event.id, ctx.attempt);
          if (ctx.attempt === 1) throw new Error("printer offline");
        },
        // Fails every attempt: its events keep their jobs while the test looks.
        "heal.kept": (event, ctx) => {
          note(event.id, ctx.attempt);
          throw new Error("printer offline");
        },
      }),
    ],
  );
  // A registered company's waiting events heal too, from its own part of the log.
  const added = await fetch(`${svc.url}/accounts`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ id: "acme", apiKey: "svc_live_heal_acme_0123456789", signingSecret: ACME_SECRET }),
  });
  expect(added.status).toBe(201);
});
afterAll(async () => {
  await svc.stop();
  await redis.destroy();
});

const queue = () => svc.service.worker!.eventsQueue;

/** The event log's rows of these events: status, the job recorded, attempts. */
async function logged(ids: string[]) {
  const { rows } = await sql<{ id: string; status: string; job_id: string | null }>`
    select id, status, job_id from events where id = any(${ids}::text[]) order by id`.execute(svc.database.db);
  return rows;
}

/** Delivers `count` events of `type` (to the default company, or to acme), and waits until each waits for a retry in a job. */
async function eventsWaitingInJobs(type: string, count: number, account?: "acme"): Promise<string[]> {
  const events = Array.from({ length: count }, () => sampleEvent({ type }));
  for (const event of events) {
    const text = JSON.stringify(event);
    const answer = account
      ? await fetch(`${svc.url}/webhooks/${account}`, {
          method: "POST",
          body: text,
          headers: { "content-type": "application/json", "x-svc-signature": signPayload(text, ACME_SECRET) },
        })
      : await svc.deliver(event);
    expect(answer.status).toBe(200);
  }
  const ids = events.map((e) => e.id);
  await waitFor(async () => (await logged(ids)).filter((r) => r.status === "received" && r.job_id !== null).length === count, {
    what: "every event waiting for a retry",
    timeoutMs: 30_000,
  });
  await waitFor(async () => (await jobsOf(ids)).length === count, { what: "each event's retry in a job" });
  return ids;
}

/** The events queue's jobs (any state) that carry these events. */
async function jobsOf(ids: string[]) {
  const jobs = await queue().getJobs(["waiting", "delayed", "active", "prioritized", "completed", "failed"]);
  return jobs.filter((j) => ids.includes(j.data.id));
}

const RESTORED_LINE = "events waiting for a retry that no job held were enqueued again from the event log";
const restoredLines = () => svc.logs.records().filter((r) => r.msg === RESTORED_LINE);

describe("queue state lost with Redis", () => {
  it("after FLUSHALL, every event waiting for a retry runs again, without a restart, and ends handled on its next attempt", async () => {
    const ids = [...(await eventsWaitingInJobs("heal.later", EVENTS)), ...(await eventsWaitingInJobs("heal.later", 2, "acme"))];
    const restored = () => svc.service.metrics.eventsRestored.get().then((m) => m.values[0]?.value ?? 0);
    const before = await restored();

    await svc.redis.flushall();

    await waitFor(async () => (await logged(ids)).every((r) => r.status === "handled"), {
      what: "every event handled",
      timeoutMs: 90_000,
    });
    // Each ran on its next attempt, numbered on from the first (not a new run from 1).
    for (const id of ids) expect(seen.get(id)).toEqual([1, 2]);
    expect(await restored()).toBe(before + EVENTS + 2);
    expect(restoredLines().map((r) => (r as { restored?: number }).restored)).toEqual([EVENTS + 2]);
    // acme's ran as acme's: logged under it, not under the default company.
    const { rows } = await sql<{ account_id: string; n: number }>`
      select account_id, count(*)::int as n from events where id = any(${ids}::text[]) group by 1 order by 1`.execute(svc.database.db);
    expect(rows).toEqual([
      { account_id: "acme", n: 2 },
      { account_id: "default", n: EVENTS },
    ]);
  }, 120_000);

  it("restores no job that still exists, and two healers at once add each missing job once", async () => {
    const ids = await eventsWaitingInJobs("heal.kept", EVENTS);
    const heal = () =>
      createJobRestorer({
        log: svc.service.eventLog,
        queue: queue(),
        connection: svc.redis,
        attempts: 5,
        backoffMs: Number(BACKOFF_MS),
        dedupTtlMs: 60_000,
        onRestored: () => undefined,
        logger: pino({ level: "silent" }),
      }).pass();

    expect(await heal()).toBe(0);
    expect(await jobsOf(ids)).toHaveLength(EVENTS);

    // Their jobs gone some other way than an emptied Redis (the worker sees nothing to heal itself).
    const recorded = (await logged(ids)).map((r) => r.job_id!);
    for (const jobId of recorded) await queue().remove(jobId);
    expect(await jobsOf(ids)).toHaveLength(0);
    await Promise.all([heal(), heal()]);
    const jobs = await jobsOf(ids);
    expect(jobs.map((j) => j.id).sort()).toEqual([...recorded].sort());
  }, 60_000);
});
