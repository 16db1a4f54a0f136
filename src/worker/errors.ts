// The worker layer's errors, each with a stable `code`: an operator's request refused, a misuse of
// `ctx.step`, a HANDLERS_MODULE that does not load, a call to an API the service does not have.
import { UnrecoverableError } from "bullmq";
import { answeredByCode, codedError, type HttpAnswer } from "../errors.js";

/** Each refusal of an operator request by its code, with its HTTP status. */
const OPERATOR_ANSWERS = {
  invalid_request: { status: 400 },
  unknown_handler: { status: 400 },
  event_not_found: { status: 404 },
  replay_not_found: { status: 404 },
  record_not_found: { status: 404 },
  // A request the service cannot serve as configured or as things stand: asked again, it is refused again.
  sync_unavailable: { status: 409 },
  confirm_required: { status: 409 },
  replay_running: { status: 409 },
  idempotency_key_reused: { status: 422 },
} as const satisfies Record<string, HttpAnswer>;

/** The code of an operator request's refusal: what a client of the operator actions (the CLI) may test. */
export type OperatorRefusal = keyof typeof OPERATOR_ANSWERS;

/** An operator request refused for the caller's fault (an HTTP 4xx by its code, OPERATOR_ANSWERS); nothing was changed. */
export class OperatorActionError extends answeredByCode(OPERATOR_ANSWERS) {}

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
  }
}

/** A HANDLERS_MODULE that cannot be loaded or does not register: refused at load, naming its path. */
export class HandlersModuleError extends codedError("invalid_handlers_module") {}

/**
 * A handler called `ctx.api` on a service with no upstream configured. No retry can fix that, so
 * it fails the event for good (a dead letter to replay once the API is configured).
 */
export class ApiNotConfiguredError extends UnrecoverableError {
  readonly code = "api_not_configured";
  constructor(method: string, why = "this service has no upstream API (set API_BASE_URL and API_KEY)") {
    super(`ctx.api.${method}: ${why}`);
  }
}
