import { answeredByCode, NamedError, type HttpAnswer } from "../errors.js";
import { type UnstorableReason, storableText } from "./values.js";
import { type MirrorKind } from "./kinds.js";
import { idProblem, printable, shortened } from "../base/text.js";

// Every error of the mirror layer (the mirror store, the event log, the steps, the record story),
// in one place: what each refuses and, where a caller can cause it, its HTTP answer.

/**
 * A list filter or parameter the mirror, the event log or a record's story cannot apply (unknown
 * name or status, malformed date, limit out of range, bad cursor or id): an HTTP 400, the one
 * `invalid_filter` of the layer.
 */
export class MirrorFilterError extends NamedError {
  readonly code = "invalid_filter";
  readonly http: HttpAnswer = { status: 400 };
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** An id to read by (a path's or a filter's): one the database could hold (idProblem), else a MirrorFilterError naming why. */
export function checkedId(field: string, id: unknown, maxLength?: number): string {
  // Callers may be untyped JavaScript: a filter's id is checked to be text first.
  if (typeof id !== "string") throw new MirrorFilterError(field, `${field} must be a string`);
  const problem = idProblem(id, maxLength);
  if (problem) throw new MirrorFilterError(field, `${field} ${problem}`);
  return id;
}

/** Why a list's limit is refused: the one message of checkLimit and checkListParams. */
const limitError = (max: number) => new MirrorFilterError("limit", `limit must be an integer from 1 to ${max}`);

/** The limit of a list, when given: an integer from 1 to `max`, else a MirrorFilterError. */
export function checkLimit(limit: number | undefined, max: number): number | undefined {
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > max)) throw limitError(max);
  return limit;
}

/**
 * A list's text parameters (URL query, CLI flags) checked against the `known` names, so a typo is a
 * 400 rather than an unfiltered list; returns `limit` read as a number, when given.
 */
export function checkListParams(
  params: Record<string, string | undefined>,
  known: readonly string[],
  maxLimit: number,
): number | undefined {
  for (const name of Object.keys(params))
    if (!known.includes(name)) throw new MirrorFilterError(name, `unknown filter ${name}; filters are ${known.join(", ")}`);
  const limit = params.limit;
  if (limit === undefined) return undefined;
  if (!new RegExp(`^\\d{1,${String(maxLimit).length}}$`).test(limit)) throw limitError(maxLimit);
  return Number(limit);
}

/** Each refusal of the event log by its code, with its HTTP status. */
const EVENT_LOG_ANSWERS = {
  invalid_filter: { status: 400 },
  invalid_event: { status: 400 },
  not_found: { status: 404 },
} as const satisfies Record<string, HttpAnswer>;

/**
 * A request the event log refuses: a bad event (HTTP 400) or an unknown event id (404); nothing was
 * changed. `invalid_filter` is for callers outside the layer that check a selection of events
 * themselves (worker/replays.ts); the log's own filters throw MirrorFilterError.
 */
export class EventLogError extends answeredByCode(EVENT_LOG_ANSWERS) {
  constructor(
    code: keyof typeof EVENT_LOG_ANSWERS,
    readonly field: string,
    message: string,
  ) {
    super(code, message);
  }
}

/**
 * A record handed to the mirror lacks a field its table needs, has it in the wrong type, or holds
 * a value PostgreSQL would refuse. That record was not written (it is set aside as a rejected
 * record); `reason` is a stable code, the message names the field, never its value.
 */
export class MirrorRecordError extends NamedError {
  readonly code = "invalid_mirror_record";
  constructor(
    readonly kind: MirrorKind,
    readonly id: string | undefined,
    readonly field: string,
    readonly expected: string,
    readonly reason: UnstorableReason = "invalid_field",
  ) {
    super(
      `${kind} record ${id === undefined ? "(no id)" : JSON.stringify(storableText(id, 100))}: field ${storableText(field, 200)} must be ${expected}`,
    );
  }
}

/** An operator read ran past OPERATOR_QUERY_TIMEOUT_MS and was cancelled: an HTTP 503, nothing changed. */
class OperatorQueryTimeoutError extends NamedError {
  readonly code = "query_timeout";
  readonly http: HttpAnswer = { status: 503 };
  constructor(readonly timeoutMs: number) {
    super(
      `the query ran longer than ${timeoutMs} ms (OPERATOR_QUERY_TIMEOUT_MS) and was cancelled; narrow it (since/until, type, status) or retry`,
    );
  }
}

/** PostgreSQL's query_canceled: a statement_timeout ran out. */
const QUERY_CANCELED = "57014";

/** Runs an operator read, turning a statement timeout into OperatorQueryTimeoutError. */
export async function withOperatorTimeout<T>(timeoutMs: number, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if ((error as { code?: unknown }).code === QUERY_CANCELED) throw new OperatorQueryTimeoutError(timeoutMs);
    throw error;
  }
}

/** Each refusal of the accounts registry by its code, with its HTTP status. */
const ACCOUNT_ANSWERS = {
  invalid_account: { status: 400 },
  secrets_key_missing: { status: 400 },
  account_not_found: { status: 404 },
  account_exists: { status: 409 },
  // The API refused the key POST /accounts tried: the body is well formed, its key is not usable.
  key_refused: { status: 422 },
} as const satisfies Record<string, HttpAnswer>;

/** Why the accounts registry (accounts.ts) refused: its code and HTTP status (ACCOUNT_ANSWERS), the field at fault when there is one. */
export class AccountError extends answeredByCode(ACCOUNT_ANSWERS) {
  constructor(
    code: keyof typeof ACCOUNT_ANSWERS,
    message: string,
    readonly field?: string,
  ) {
    super(code, message);
  }
}

/** The refusal of an id no account has, the id as a line shows it (control characters spelled out, cut at 80). */
export const accountNotFound = (id: string) => new AccountError("account_not_found", `no account ${shortened(printable(id), 80)}`);

/** The registry could not be read yet (the database away at start) or an account's secrets do not open: the edge answers 503. */
export class AccountsUnavailableError extends NamedError {
  readonly code = "accounts_unavailable";
  readonly http: HttpAnswer = { status: 503 };
}

/** The embedded database cannot start (embedded-server.ts): one line saying why and what to do. */
export class EmbeddedServerError extends NamedError {
  readonly code = "embedded_database";
}
