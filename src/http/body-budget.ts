/** Too many body bytes are buffered across requests right now: 503, the sender retries later. */
export class ServerBusyError extends Error {
  readonly code = "server_busy";
  constructor(readonly budgetBytes: number) {
    super(`request bodies in flight already hold ${budgetBytes} bytes`);
    this.name = "ServerBusyError";
  }
}

/** One request's share of the budget: take as bytes arrive, close once the request is done. */
export interface BodyReservation {
  /** Counts `bytes` against the budget; throws ServerBusyError (counting nothing) when over it. */
  take(bytes: number): void;
  /** Gives back everything taken; idempotent. */
  close(): void;
}

export interface BodyBudget {
  open(): BodyReservation;
  /** Bytes held by open reservations. */
  readonly inUse: number;
}

/**
 * A cap on request-body bytes held in memory across all in-flight requests, so many slow or
 * large uploads at once cannot exhaust memory (each is already capped by MAX_BODY_BYTES).
 *
 * @example const r = budget.open(); try { await readRawBody(c, max, r) } finally { r.close() }
 */
export function createBodyBudget(maxBytes: number): BodyBudget {
  let inUse = 0;
  return {
    get inUse() {
      return inUse;
    },
    open() {
      let held = 0;
      return {
        take(bytes) {
          if (inUse + bytes > maxBytes) throw new ServerBusyError(maxBytes);
          inUse += bytes;
          held += bytes;
        },
        close() {
          inUse -= held;
          held = 0;
        },
      };
    },
  };
}
