import { codedError } from "../errors.js";
import { cutAt } from "../base/text.js";

/**
 * A handler still running at its deadline (HANDLER_TIMEOUT_MS). A retryable failure: the attempt
 * ends without it (its slot is freed even if its promise never settles) and a retry runs it again.
 */
export class HandlerTimeoutError extends codedError("handler_timeout") {
  constructor(readonly timeoutMs: number) {
    super(`handler timed out after ${timeoutMs} ms`);
  }
}

/** A delivery of a type only this service produces (`change.*`): refused at the edge with a 400. */
export class ReservedEventTypeError extends codedError("reserved_event_type", { status: 400 }) {
  constructor(readonly type: string) {
    super(`event types starting with "change." are produced by the mirror, never delivered: ${JSON.stringify(type.slice(0, 100))}`);
  }
}

/**
 * The bounds of a failure's text wherever it is kept (BullMQ's failedReason and stacktrace, the
 * event log, the logs): a handler's error may quote a whole payload or a response body, and a
 * stack may hold one per attempt.
 */
export const MAX_ERROR_MESSAGE_CHARS = 8192;
export const MAX_ERROR_STACK_CHARS = 4096;

/**
 * `text` when it fits in `max` characters, else its first characters and a marker saying how much
 * was cut; never longer than `max` plus the marker (about 40 characters), never a split surrogate pair.
 */
export function boundedErrorText(text: string, max: number): string {
  if (text.length <= max) return text;
  const kept = cutAt(text, max);
  return `${kept}… [cut: ${text.length - kept.length} of ${text.length} characters]`;
}

/** Room for a stack's first line (`Name: message`) before its frames, which are what a stack is for. */
const MAX_STACK_HEADER_CHARS = 1024;

/** A stack bounded to MAX_ERROR_STACK_CHARS: its header cut first (the message is kept apart), then its frames. */
export function boundedStack(stack: string): string {
  if (stack.length <= MAX_ERROR_STACK_CHARS) return stack;
  const framesAt = stack.search(/\n\s+at /);
  if (framesAt < 0) return boundedErrorText(stack, MAX_ERROR_STACK_CHARS);
  const header = boundedErrorText(stack.slice(0, framesAt), MAX_STACK_HEADER_CHARS);
  return header + boundedErrorText(stack.slice(framesAt), MAX_ERROR_STACK_CHARS - header.length);
}

/**
 * Bounds `err`'s message and stack in place (what BullMQ stores when a job fails with it) and
 * returns it; anything thrown that is not an Error becomes one with its bounded text.
 */
export function withBoundedText(err: unknown): Error {
  if (!(err instanceof Error)) return new Error(boundedErrorText(String(err), MAX_ERROR_MESSAGE_CHARS));
  try {
    err.message = boundedErrorText(err.message, MAX_ERROR_MESSAGE_CHARS);
    if (typeof err.stack === "string") err.stack = boundedStack(err.stack);
  } catch {
    // A frozen error: its text stays as thrown, the rest still works.
  }
  return err;
}
