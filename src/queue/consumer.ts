import { UnrecoverableError, Worker, type Job } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { EventDataError, type AnyEvent } from "../events/catalog.js";
import { dispatchEvent, type HandlerFailure } from "../events/dispatch.js";
import type { HandlerRegistry } from "../events/registry.js";
import type { EventJobData } from "./event-job.js";
import { EVENTS_QUEUE } from "./names.js";

export interface EventWorkerOptions<Ctx> {
  /** A "worker" connection (maxRetriesPerRequest: null). */
  connection: Redis;
  prefix: string;
  queueName?: string;
  registry: HandlerRegistry<Ctx>;
  concurrency: number;
  /** Lock duration and stalled-check interval; a crashed worker's jobs rerun after it. */
  lockMs?: number;
  maxStalls?: number;
  logger: Logger;
  makeContext(job: Job<EventJobData>, event: AnyEvent, logger: Logger): Ctx;
  /** Errors that no retry can fix (a 4xx from the API other than 429). */
  isPermanent?(err: unknown): boolean;
}

interface Progress {
  done?: string[];
}

/**
 * Runs the registry's handlers for each event job. Every handler runs even when another fails;
 * the keys of those that succeeded are kept in the job's progress, so a retry re-runs only the
 * ones that failed. A job fails for good (no retry) when every failure is permanent.
 */
export function createEventWorker<Ctx>(options: EventWorkerOptions<Ctx>): Worker<EventJobData> {
  const { registry, logger } = options;
  const permanent = (err: unknown) => err instanceof UnrecoverableError || (options.isPermanent?.(err) ?? false);

  const worker = new Worker<EventJobData>(
    options.queueName ?? EVENTS_QUEUE,
    async function processEvent(job) {
      const event: AnyEvent = { ...job.data.payload, id: job.data.id, type: job.data.type };
      const log = logger.child({ eventId: event.id, eventType: event.type, jobId: job.id, attempt: job.attemptsMade + 1 });
      const done = new Set((job.progress as Progress | undefined)?.done ?? []);
      let result;
      // A success is recorded only while another handler of this run may still fail: the last
      // one to succeed when all others did completes the job instead (one Redis script fewer per
      // job, a third of the worker's Redis work with a single handler).
      const pending = registry.handlersFor(event.type).filter((h) => !done.has(h.key)).length;
      let succeeded = 0;
      try {
        result = await dispatchEvent(registry, event, options.makeContext(job, event, log), done, async (key) => {
          done.add(key);
          if (++succeeded === pending) return;
          await job.updateProgress({ done: [...done] } satisfies Progress);
        });
      } catch (err) {
        if (err instanceof EventDataError) throw new UnrecoverableError(err.message);
        throw err;
      }
      if (result.failures.length === 0) return { handled: done.size };
      for (const f of result.failures) log.warn({ handler: f.key, err: describe(f.error) }, "handler failed");
      const summary = result.failures.map((f: HandlerFailure) => `${f.key}: ${describe(f.error)}`).join("; ");
      if (result.failures.every((f) => permanent(f.error))) throw new UnrecoverableError(summary);
      throw new Error(summary);
    },
    {
      connection: options.connection,
      prefix: options.prefix,
      concurrency: options.concurrency,
      autorun: false,
      ...(options.lockMs ? { lockDuration: options.lockMs, stalledInterval: options.lockMs } : {}),
      // BullMQ's default (1) fails a job whose worker crashed twice: a crash is not the job's fault.
      maxStalledCount: options.maxStalls ?? 5,
    },
  );
  worker.on("error", (err) => logger.warn({ err: err.message }, "event worker error"));
  return worker;
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
