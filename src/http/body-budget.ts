import { ServerBusyError } from "./errors.js";

// The edge's budget of request-body bytes held in memory: in all, and per source (an account's
// path, a remote address), so that no one sender can spend the others' share. See docs/edge.md
// ("What the body budget bounds").

/** One request's share of the budget: take as bytes arrive, close once the request is done. */
export interface BodyReservation {
  /** Counts `bytes` against the budget and each source's share; throws ServerBusyError (counting nothing) when over either. */
  take(bytes: number): void;
  /** Gives back everything taken; idempotent. */
  close(): void;
}

export interface BodyBudgetOptions {
  /** Body bytes held across all in-flight requests at most (MAX_BUFFERED_BODY_BYTES). */
  maxBytes: number;
  /** The most of `maxBytes` one source may hold, as a fraction (BODY_BUDGET_SOURCE_SHARE); 1 turns shares off. */
  sourceShare?: number;
  /** A source may always hold one body of this size (MAX_BODY_BYTES), whatever its share says. */
  minSourceBytes?: number;
}

/**
 * A cap on request-body bytes held in memory, counted as they arrive (never as declared), in all
 * and per source: a request names its sources (e.g. `path:acme`, `addr:203.0.113.9`) and may not
 * take bytes past any one's share. Many slow or large uploads at once cannot exhaust memory, and
 * one sender, or everyone aiming at one account's path, cannot fill the budget for the others.
 *
 * @example const r = budget.open(["path:acme"]); try { await readRawBody(c, { maxBytes, reservation: r }) } finally { r.close() }
 */
export function createBodyBudget(options: BodyBudgetOptions) {
  const { maxBytes } = options;
  const perSource = Math.min(maxBytes, Math.max(Math.floor(maxBytes * (options.sourceShare ?? 1)), options.minSourceBytes ?? 0));
  let inUse = 0;
  // Bytes held per source; a source leaves the map when it holds nothing (the map stays as small as what is in flight).
  const bySource = new Map<string, number>();
  const give = (source: string, bytes: number) => {
    const left = (bySource.get(source) ?? 0) - bytes;
    if (left > 0) bySource.set(source, left);
    else bySource.delete(source);
  };
  return {
    /** Bytes held by open reservations. */
    get inUse() {
      return inUse;
    },
    /** The most one source may hold. */
    perSource,
    /** Bytes held for `source` now. */
    heldBy: (source: string) => bySource.get(source) ?? 0,
    open(sources: readonly string[] = []): BodyReservation {
      let held = 0;
      return {
        take(bytes) {
          if (inUse + bytes > maxBytes) throw new ServerBusyError(maxBytes);
          for (const source of sources) if ((bySource.get(source) ?? 0) + bytes > perSource) throw new ServerBusyError(perSource);
          inUse += bytes;
          held += bytes;
          for (const source of sources) bySource.set(source, (bySource.get(source) ?? 0) + bytes);
        },
        close() {
          if (held === 0) return;
          inUse -= held;
          for (const source of sources) give(source, held);
          held = 0;
        },
      };
    },
  };
}

/** Without a budget nothing is counted. */
export const NO_RESERVATION: BodyReservation = { take: () => undefined, close: () => undefined };
