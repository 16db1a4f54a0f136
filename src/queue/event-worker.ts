import { DEFAULTS } from "../config/defaults.js";
import { UnrecoverableError, Worker, type Job } from "bullmq";
import type { RedisClient } from "../redis/connection.js";
import type { Logger } from "pino";
import { EventDataError, type AnyEvent } from "../events/catalog.js";
import { dispatchEvent, type HandlerFailure } from "../events/dispatch.js";
import type { HandlerRegistry } from "../events/registry.js";
import type { EventJobData } from "./event-job.js";
import type { EventJournal } from "./event-journal.js";
import { EVENTS_QUEUE } from "./names.js";

export interface EventWorkerOptions<Ctx> {
  /** A "worker" connection (maxRetriesPerRequest: null). */
  connection: RedisClient;
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
  /** The event log: every event taken and each handler's outcome. */
  journal?: EventJournal;
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
  const { registry, logger, journal } = options;
  const permanent = (err: unknown) => err instanceof UnrecoverableError || (options.isPermanent?.(err) ?? false);

  const worker = new Worker<EventJobData>(
    options.queueName ?? EVENTS_QUEUE,
    async function processEvent(job) {
      const event: AnyEvent = { ...job.data.payload, id: job.data.id, type: job.data.type };
      const log = logger.child({ eventId: event.id, eventType: event.type, jobId: job.id, attempt: job.attemptsMade + 1 });
      const done = new Set((job.progress as Progress | undefined)?.done ?? []);
      // A replay aimed at some handlers counts every other one as done already.
      if (job.data.only) for (const h of registry.handlersFor(event.type)) if (!job.data.only.includes(h.key)) done.add(h.key);
      const final = () => job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      await journal?.received({ id: event.id, type: event.type, payload: job.data.payload });
      let result;
      // A success is recorded only while another handler of this run may still fail: the last
      // one to succeed when all others did completes the job instead (one Redis script fewer per
      // job, a third of the worker's Redis work with a single handler).
      const pending = registry.handlersFor(event.type).filter((h) => !done.has(h.key)).length;
      let succeeded = 0;
      try {
        result = await dispatchEvent(registry, event, options.makeContext(job, event, log), done, async (key) => {
          done.add(key);
          await journal?.handlerOutcome(event.id, key, { status: "ok" });
          if (++succeeded === pending) return;
          await job.updateProgress({ done: [...done] } satisfies Progress);
        });
      } catch (err) {
        if (err instanceof EventDataError) {
          await journal?.finish(event.id, "failed");
          throw new UnrecoverableError(err.message);
        }
        throw err;
      }
      for (const u of result.unsaved) log.warn({ handler: u.key, err: errorMessage(u.error) }, "handler succeeded but its progress was not saved: a retry runs it again");
      if (result.failures.length === 0) {
        await journal?.finish(event.id, "handled");
        return { handled: done.size };
      }
      for (const f of result.failures) {
        log.warn({ handler: f.key, err: errorMessage(f.error) }, "handler failed");
        await journal?.handlerOutcome(event.id, f.key, { status: "failed", error: errorMessage(f.error) });
      }
      const summary = result.failures.map((f: HandlerFailure) => `${f.key}: ${errorMessage(f.error)}`).join("; ");
      const givingUp = result.failures.every((f) => permanent(f.error));
      if (givingUp || final()) await journal?.finish(event.id, "failed");
      if (givingUp) throw new UnrecoverableError(summary);
      throw new Error(summary);
    },
    {
      connection: options.connection,
      prefix: options.prefix,
      concurrency: options.concurrency,
      autorun: false,
      ...(options.lockMs ? { lockDuration: options.lockMs, stalledInterval: options.lockMs } : {}),
      // BullMQ's default (1) fails a job whose worker crashed twice: a crash is not the job's fault.
      maxStalledCount: options.maxStalls ?? DEFAULTS.jobMaxStalls,
    },
  );
  worker.on("error", (err) => logger.warn({ err: err.message }, "event worker error"));
  return worker;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
