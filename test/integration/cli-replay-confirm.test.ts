import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createEventLog } from "../../src/mirror/event-log.js";
import { EVENTS_QUEUE } from "../../src/queue/events-queue.js";
import { createRedisConnection } from "../../src/redis/redis.js";
import { sampleEvent } from "../helpers/edge.js";
import { openTestDatabase } from "../helpers/postgres.js";
import { ADMIN_TOKEN, startService } from "../helpers/service.js";
import { cli } from "../helpers/cli-main.js";
import { waitFor } from "../helpers/wait-for.js";

// `replay` by filter above BULK_REPLAY_CONFIRM_ABOVE (2 here): refused in one line naming the count
// and --confirm, and done with --confirm, wherever the replay runs (stores opened by the CLI, the
// service holding the embedded store, a service at --url).

/** The refusal: one line naming the count and the flag, no stack frame, exit 1. */
function expectRefused(run: { code: number; stderr: string }, count: number) {
  expect(run.code).toBe(1);
  expect(run.stderr).toMatch(new RegExp(`^svc-webhooks: ${count} events match, more than .*BULK_REPLAY_CONFIRM_ABOVE.*: add --confirm`));
  expect(run.stderr.trim().split("\n")).toHaveLength(1);
  expect(run.stderr).not.toMatch(/^\s+at /m);
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** How many jobs the events queue of `prefix` holds in any state. */
async function queuedJobs(prefix: string): Promise<number> {
  const connection = createRedisConnection(inject("redisUrl"), "worker");
  const queue = new Queue(EVENTS_QUEUE, { connection, prefix });
  try {
    const counts = await queue.getJobCounts();
    return Object.values(counts).reduce((a, b) => a + b, 0);
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

describe("replay --confirm", () => {
  it("on stores the CLI opens: refuses above the cap without it, queuing nothing, and replays with it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-confirm-"));
    const database = await openTestDatabase("embedded", { dataDir });
    const log = createEventLog(database.db);
    for (const n of [1, 2, 3])
      await log.recordAttempt({ id: `evt_c${n}`, type: "guest.visited", payload: { id: `evt_c${n}` }, status: "failed", handlers: {} });
    await database.close();
    const prefix = `test-confirm-${randomUUID().slice(0, 8)}`;
    const env = {
      DATA_DIR: dataDir,
      DATABASE_SCHEMA: database.schema,
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: prefix,
      BULK_REPLAY_CONFIRM_ABOVE: "2",
    };

    expectRefused(await cli(["replay", "--status", "failed"], env), 3);
    expect(await queuedJobs(prefix)).toBe(0);
    const confirmed = await cli(["replay", "--status", "failed", "--confirm", "--json"], env);
    expect(confirmed.code, confirmed.stderr).toBe(0);
    expect(JSON.parse(confirmed.stdout)).toEqual({ queued: 3 });
    expect(await queuedJobs(prefix)).toBe(3);
    // At or under the cap, no confirmation is asked for.
    const few = await cli(["replay", "--status", "failed", "--since", "2000-01-01", "--type", "guest.visited"], {
      ...env,
      BULK_REPLAY_CONFIRM_ABOVE: "3",
    });
    expect(few.code, few.stderr).toBe(0);
  }, 60_000);

  it("through the service holding the embedded store, and at --url: the service's refusal told the same way", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-confirm-held-"));
    const svc = await startService({ BULK_REPLAY_CONFIRM_ABOVE: "2" }, [], { dataDir });
    cleanups.push(() => svc.stop());
    const events = [1, 2, 3].map(() => sampleEvent({ type: "guest.visited", data: {} }));
    for (const event of events) expect((await svc.deliver(event)).status).toBe(200);
    await waitFor(async () => (await svc.service.eventLog.query({ type: "guest.*", status: "handled" })).data.length === 3, {
      what: "the three events handled",
    });
    // The deployment's environment, as the service has it: the CLI goes through the service's server.
    const env = {
      DATA_DIR: dataDir,
      DATABASE_SCHEMA: svc.database.schema,
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: svc.prefix,
      BULK_REPLAY_CONFIRM_ABOVE: "2",
    };
    const remote = { ADMIN_TOKEN, BULK_REPLAY_CONFIRM_ABOVE: "1000" };

    expectRefused(await cli(["replay", "--type", "guest.*"], env), 3);
    // At --url the service's cap counts, not the CLI's environment's.
    expectRefused(await cli(["replay", "--type", "guest.*", "--url", svc.url], remote), 3);
    for (const [args, where] of [
      [["replay", "--type", "guest.*", "--confirm"], env],
      [["replay", "--type", "guest.*", "--confirm", "--url", svc.url], remote],
    ] as const) {
      const confirmed = await cli([...args, "--json"], where);
      expect(confirmed.code, confirmed.stderr).toBe(0);
      await waitFor(
        async () => (await svc.service.eventLog.query({ type: "guest.*" })).data.every((e) => e.attempts === (where === env ? 2 : 3)),
        { what: "the replayed events' attempts" },
      );
      // On the stores here the CLI queues them itself, as on a DATABASE_URL deployment.
      if (where === env) {
        expect(JSON.parse(confirmed.stdout)).toEqual({ queued: 3 });
        continue;
      }
      // At --url, a bulk replay of the service's, followed by its id: at --url, or straight from Redis.
      expect(JSON.parse(confirmed.stdout)).toMatchObject({ queued: 3, bulk: expect.stringMatching(/^bulk-/) as string });
      const { bulk } = JSON.parse(confirmed.stdout) as { bulk: string };
      for (const [at, asking] of [
        [["--url", svc.url], where],
        [[], env],
      ] as const) {
        const state = async () =>
          (JSON.parse((await cli(["replay", "status", bulk, ...at, "--json"], asking)).stdout) as { state: string }).state;
        await waitFor(async () => (await state()) === "done", { what: "the bulk replay done" });
        const said = await cli(["replay", "status", bulk, ...at], asking);
        expect(said.stdout).toBe(`bulk replay ${bulk} is done: of 3 events, 3 handled, 0 failed`);
        // A replay that ended stays as it ended.
        const cancelled = await cli(["replay", "cancel", bulk, ...at], asking);
        expect(cancelled.code, cancelled.stderr).toBe(0);
        expect(cancelled.stdout).toBe(`bulk replay ${bulk} is done: of 3 events, 3 handled, 0 failed`);
      }
    }
    const unknown = await cli(["replay", "status", "bulk-00000000-0000-0000-0000-000000000000"], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe("svc-webhooks: replay_not_found: no bulk replay bulk-00000000-0000-0000-0000-000000000000");
  }, 120_000);
});
