import type { Job } from "bullmq";
import { OperatorActionError } from "./operator-action-error.js";
import type { OperatorActions } from "./operator-actions.js";

/**
 * The sync-queue job through which a CLI hands an operator action to the service that holds the
 * embedded database (only that process may open it): the worker runs the action and the job's
 * return value is its answer.
 */
export const OPERATOR_ACTION_JOB = "operator-action";

/** The actions that need the event log, as a job's data. */
export type OperatorActionRequest =
  | { action: "replayEvent"; id: string; handler?: string }
  | { action: "replayMatching"; filter: Record<string, string>; dryRun?: boolean; fresh?: boolean; confirm?: number };

/** A refusal travels as a value, not a failed job: it is the caller's answer, and nothing is retried. */
export type OperatorActionOutcome = { ok: true; result: unknown } | { ok: false; code: string; message: string };

/** Runs one handed-over request; an error other than a refusal fails the job (its reason is the caller's answer). */
export async function runOperatorActionJob(actions: OperatorActions, job: Pick<Job, "data">): Promise<OperatorActionOutcome> {
  const request = job.data as OperatorActionRequest;
  try {
    const result =
      request.action === "replayEvent"
        ? await actions.replayEvent(request.id, request.handler ? { handler: request.handler } : {})
        : await actions.replayMatching({
            filter: request.filter,
            dryRun: request.dryRun === true,
            fresh: request.fresh === true,
            ...(request.confirm !== undefined ? { confirm: request.confirm } : {}),
          });
    return { ok: true, result };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (err instanceof OperatorActionError || code === "invalid_filter")
      return { ok: false, code: String(code), message: (err as Error).message };
    throw err;
  }
}
