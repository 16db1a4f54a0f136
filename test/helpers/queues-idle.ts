import type { Queue } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import { defineScripts } from "../../src/redis/redis.js";
import { waitFor } from "./wait-for.js";

/**
 * Counts a queue's jobs that are waiting, paused, active, prioritized or delayed — apart from the
 * next run of a job scheduler (a delayed job with a repeat key: the hourly event-log prune, a
 * reconcile) — in one script: read one list at a time, a job that moves from delayed to active in
 * between (a debounced refresh starting) is seen in neither, and the queue looks idle while it runs.
 * KEYS: wait, paused, active, prioritized, delayed. ARGV: the job key prefix.
 */
const BUSY_JOBS = `
local busy = redis.call("LLEN", KEYS[1]) + redis.call("LLEN", KEYS[2]) + redis.call("LLEN", KEYS[3]) + redis.call("ZCARD", KEYS[4])
for _, id in ipairs(redis.call("ZRANGE", KEYS[5], 0, -1)) do
  if not redis.call("HGET", ARGV[1] .. id, "rjk") then busy = busy + 1 end
end
return busy
`;

interface Scripts {
  svcTestBusyJobs(wait: string, paused: string, active: string, prioritized: string, delayed: string, jobPrefix: string): Promise<number>;
}

async function busyJobs(queue: Queue): Promise<number> {
  const client = (await queue.getBackend().client) as unknown as Redis | Cluster;
  const scripts = defineScripts<Scripts>(client, { svcTestBusyJobs: { numberOfKeys: 5, lua: BUSY_JOBS } });
  const { wait, paused, active, prioritized, delayed } = queue.keys;
  return scripts.svcTestBusyJobs(wait!, paused!, active!, prioritized!, delayed!, queue.toKey(""));
}

/**
 * Resolves once no job of `queues` is busy (busyJobs), each queue read in one snapshot. Pass the
 * queues upstream first (events before sync): a queue found idle is not fed again by one read later.
 */
export function waitForQueuesIdle(queues: readonly Queue[], opts: { timeoutMs: number; intervalMs?: number; what: string }): Promise<true> {
  return waitFor(async () => {
    for (const q of queues) if ((await busyJobs(q)) > 0) return false;
    return true;
  }, opts);
}
