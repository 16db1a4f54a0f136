import { UnrecoverableError } from "bullmq";

export type StepErrorCode = "invalid_step_name" | "duplicate_step" | "step_result_not_json" | "step_result_too_large" | "step_unbound";

/**
 * A misuse of `ctx.step` (a bad or repeated name, a result that is not JSON): a bug in the
 * handler that no retry fixes, so it fails the event for good (an UnrecoverableError) rather than
 * running the handler, and any step that already reached the API, again and again.
 */
export class StepError extends UnrecoverableError {
  constructor(
    readonly code: StepErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "StepError";
  }
}
