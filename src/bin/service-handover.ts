import { setTimeout as sleep } from "node:timers/promises";
import type { Config } from "../config/config.js";
import { createSyncQueue } from "../queue/events-queue.js";
import { OPERATOR_ACTION_JOB, type OperatorActionOutcome, type OperatorActionRequest } from "../worker/operator-actions.js";
import { openCliRedis } from "./cli-redis.js";
import { CommandError } from "./command-error.js";

/** How long the service may take to pick the request up and answer (a bulk dry run counts the whole log). */
const HANDOVER_TIMEOUT_MS = 60_000;
const POLL_MS = 200;

/**
 * Hands an operator action to the running service that holds the embedded database: a job on the
 * sync queue its worker serves (operator-action-jobs.ts), whose answer this waits for. A refusal
 * (no such event, a bad filter) becomes a CommandError in the service's words.
 */
export async function askService<T>(
  config: Config,
  request: OperatorActionRequest,
  { timeoutMs = HANDOVER_TIMEOUT_MS, signal }: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<T> {
  const connection = await openCliRedis(config);
  const queue = createSyncQueue({ connection, config });
  try {
    // One try: a request that failed is the operator's to look at, not the queue's to repeat.
    signal?.throwIfAborted();
    const added = await queue.add(OPERATOR_ACTION_JOB, request, {
      attempts: 1,
      removeOnComplete: { age: 3600 },
      removeOnFail: { age: 3600 },
    });
    const id = added.id ?? "";
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      // The state first, then the job: a job read before it completed has no return value yet.
      const state = await queue.getJobState(id);
      const job = state === "completed" || state === "failed" ? await queue.getJob(id) : undefined;
      if (job && state === "completed") return answerOf(job.returnvalue as OperatorActionOutcome) as T;
      if (job && state === "failed") throw new CommandError(`the service could not do it: ${job.failedReason}`);
      if (Date.now() >= deadline) {
        if (state === "active")
          throw new CommandError(`the service took the request (job ${id}) but gave no answer within ${timeoutMs / 1000} s`);
        await queue.remove(id).catch(() => undefined);
        throw new CommandError(
          `the embedded database in ${config.database.dataDir} is held by another process, and no worker on QUEUE_PREFIX "${config.queuePrefix}" took the request within ${timeoutMs / 1000} s: ` +
            `run the service with a worker (ROLE=all) on this REDIS_URL and QUEUE_PREFIX, or stop the process that holds the directory`,
        );
      }
      // Ctrl-C (cli-main.ts) ends the wait: a request nobody took yet is taken back.
      if (signal?.aborted) {
        if (state !== "active") await queue.remove(id).catch(() => undefined);
        throw new CommandError(
          state === "active"
            ? `stopped waiting: the service is doing it (job ${id})`
            : "stopped: the request was taken back before the service took it",
        );
      }
      await sleep(POLL_MS, undefined, { signal }).catch(() => undefined);
    }
  } finally {
    await queue.close();
    await connection.quit().catch(() => connection.disconnect());
  }
}

function answerOf(outcome: OperatorActionOutcome): unknown {
  if (!outcome.ok) throw new CommandError(`${outcome.code}: ${outcome.message}`, outcome.code);
  return outcome.result;
}
