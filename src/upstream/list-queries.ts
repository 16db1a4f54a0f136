import type { RefusedRecord, Page } from "./models.js";
import type { BudgetClass } from "./rate-limiter.js";

// The queries and answers of the client's list calls (client.ts).

export interface ListOptions {
  /** The budget class the read is sent under (upstream/rate-limiter.ts). @defaultValue "webhook" */
  priority?: BudgetClass;
  /**
   * The read time of each attempt (the mirror passes its shared clock, `MirrorStore.clock`).
   * Called after the attempt's rate-limit slot was taken, right before its request is sent, so a
   * wait for the budget, a Retry-After pause or a retry never makes a read look older than it is.
   * The page carries the time of the attempt that answered it. @defaultValue `new Date()` then
   */
  clock?: () => Promise<Date>;
  /** Ends the read wherever it waits (the budget, a retry's backoff, the answer) once aborted. */
  signal?: AbortSignal;
}

/**
 * A page with the time its request was sent (after its rate-limit slot): a lower bound of the
 * instant the API served it. Send time, not answer time, is what stale-read comparisons need: a
 * read sent after a change always sees it, while a slow answer to a request sent before the
 * change may not, and must not look newer than a read sent later.
 */
export type ReadPage<T> = Page<T> & {
  readAt: Date;
  /** Records without the shape the spec promises: left out of `data`, never failing the page. */
  refused: RefusedRecord[];
};
export interface OrderQuery {
  restaurantId?: string;
  status?: string;
  type?: string;
  limit?: number;
  cursor?: string;
}
export interface BookingQuery {
  restaurantId?: string;
  status?: string;
  from?: string;
  to?: string;
  limit?: number;
  cursor?: string;
}
export interface MenuItemQuery {
  restaurantId?: string;
  limit?: number;
  cursor?: string;
}
