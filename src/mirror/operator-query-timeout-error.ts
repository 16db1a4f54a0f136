/** An operator read ran past OPERATOR_QUERY_TIMEOUT_MS and was cancelled: an HTTP 503, nothing changed. */
export class OperatorQueryTimeoutError extends Error {
  readonly code = "query_timeout";
  constructor(readonly timeoutMs: number) {
    super(
      `the query ran longer than ${timeoutMs} ms (OPERATOR_QUERY_TIMEOUT_MS) and was cancelled; narrow it (since/until, type, status) or retry`,
    );
    this.name = "OperatorQueryTimeoutError";
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
