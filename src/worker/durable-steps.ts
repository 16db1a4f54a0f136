import { AsyncLocalStorage } from "node:async_hooks";
import type { Logger } from "pino";
import { errorMessage } from "../events/dispatch.js";
import type { StepKey, StepStore } from "../mirror/step-store.js";
import { StepError } from "./errors.js";
import type { MirrorStore } from "../mirror/mirror-store.js";
import type { ApiClient } from "../upstream/client.js";
import { MAX_LIMIT } from "../upstream/models.js";
import {
  ORDER_FORWARD_STEPS,
  REFUNDED_STATUS,
  type Booking,
  type CreateBookingInput,
  type Order,
  type OrderStatus,
  type SettableOrderStatus,
} from "../upstream/models.js";

/**
 * Runs `fn` once per (event, handler, name) and returns its JSON result; a later attempt or a
 * replay of the event gets the stored result back without running `fn`.
 */
export type StepFunction = <T>(name: string, fn: () => Promise<T>) => Promise<T>;

/** The step whose function is running in the current async context. */
export interface StepScope extends StepKey {
  /** An earlier run started this step and recorded no result: its effect may already exist upstream. */
  recovery: boolean;
  /** When the step was first started (the earliest its effect can have happened). */
  startedAt: Date;
  logger: Logger;
}

export type DurableSteps = ReturnType<typeof createDurableSteps>;

const MAX_NAME_LENGTH = 200;

/** Durable steps over a step store; each factory has its own async context, so instances never mix. */
export function createDurableSteps(store: StepStore) {
  const scopes = new AsyncLocalStorage<StepScope>();

  /** The `step` of one handler's context for one attempt (names are unique within it). */
  function forHandler(target: { eventId: string; handlerKey: string; attempt: number; logger: Logger }): StepFunction {
    const { eventId, handlerKey, attempt, logger } = target;
    const names = new Set<string>();
    return async function step<T>(name: string, fn: () => Promise<T>): Promise<T> {
      checkStep(name, fn, names);
      names.add(name);
      const key: StepKey = { eventId, handlerKey, name };
      const claim = await store.claim(key, attempt);
      if (claim.state === "done") return fromJson(claim.json) as T;
      const log = logger.child({ step: name });
      if (claim.recovery)
        log.warn("step runs again: an earlier run recorded no result; API writes inside it look for their own effect first");
      const started = performance.now();
      const failed = async (err: unknown) => {
        await store
          .fail(key, errorMessage(err), performance.now() - started)
          .catch((e: unknown) => log.warn({ err: errorMessage(e) }, "could not record the step's failure"));
        return err;
      };
      let json: string | undefined;
      try {
        const value = await scopes.run({ ...key, recovery: claim.recovery, startedAt: claim.startedAt, logger: log }, fn);
        json = stepResultJson(name, value);
      } catch (err) {
        throw await failed(err);
      }
      // The stored JSON, parsed: the first attempt sees exactly what every later one will.
      return fromJson(await store.complete(key, json, performance.now() - started)) as T;
    };
  }

  // current: the step running in the caller's async context, if any (API writes read it to narrow a rerun).
  return { forHandler, current: (): StepScope | undefined => scopes.getStore() };
}

function checkStep(name: unknown, fn: unknown, used: ReadonlySet<string>): void {
  if (typeof name !== "string" || name === "" || name.length > MAX_NAME_LENGTH)
    throw new StepError("invalid_step_name", `a step name must be a non-empty string of at most ${MAX_NAME_LENGTH} characters`);
  if (used.has(name))
    throw new StepError(
      "duplicate_step",
      `step "${name}" ran twice in one attempt of this handler: give each step its own name (add an index in a loop)`,
    );
  if (typeof fn !== "function") throw new StepError("invalid_step_name", `step "${name}" needs a function to run`);
}

// undefined in, undefined out; the JSON text came from JSON.stringify or from jsonb.
const fromJson = (json: string | undefined): unknown => (json === undefined ? undefined : JSON.parse(json));

/** Largest step result stored: steps keep ids and small records, not documents. */
export const MAX_STEP_RESULT_BYTES = 256 * 1024;

/**
 * A step's result as the JSON text stored for it, or undefined when the step returned undefined.
 * Refuses (StepError step_result_not_json, naming where) anything JSON would change or drop
 * silently: a BigInt, a function, a symbol, NaN or ±Infinity, a Date or any object that is not a
 * plain object or an array (a Map would be stored as {}), a cycle. An undefined property of a
 * plain object is dropped, as JSON does.
 */
export function stepResultJson(stepName: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  checkJson(stepName, value, "result", new Set());
  const json = JSON.stringify(value);
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_STEP_RESULT_BYTES)
    throw new StepError(
      "step_result_too_large",
      `step "${stepName}" returned ${bytes} bytes of JSON; at most ${MAX_STEP_RESULT_BYTES} are stored (return ids, not whole documents)`,
    );
  return json;
}

/** What a step's result is said to be when it holds a value of a type JSON has no place for. */
const NOT_JSON: Partial<Record<string, string>> = {
  bigint: "a BigInt (return it as a string)",
  function: "a function",
  symbol: "a symbol",
  undefined: "undefined (return null)",
};

function checkJson(stepName: string, value: unknown, path: string, seen: Set<object>): void {
  const refuse = (what: string) => new StepError("step_result_not_json", `step "${stepName}" must return JSON, but ${path} is ${what}`);
  const notJson = NOT_JSON[typeof value];
  if (notJson !== undefined) throw refuse(notJson);
  if (typeof value === "number" && !Number.isFinite(value)) throw refuse(String(value));
  if (typeof value !== "object" || value === null) return;
  if (seen.has(value)) throw refuse("a reference back to itself (a cycle)");
  seen.add(value);
  if (Array.isArray(value)) {
    value.forEach((item, i) => checkJson(stepName, item, `${path}[${i}]`, seen));
  } else {
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      const kind =
        value instanceof Date
          ? "a Date (return date.toISOString())"
          : `a ${(value.constructor as { name?: string } | undefined)?.name ?? "non-plain"} object`;
      throw refuse(kind);
    }
    for (const [k, v] of Object.entries(value)) if (v !== undefined) checkJson(stepName, v, `${path}.${k}`, seen);
  }
  seen.delete(value);
}

/** Records read at most while looking for a step's earlier effect (20 pages of 100). */
const MAX_LOOKUP_RECORDS = 2000;

/** The first record of `records` that `matches`, looking at MAX_LOOKUP_RECORDS at most. */
async function firstOf<T>(records: AsyncIterable<T>, matches: (record: T) => boolean): Promise<T | undefined> {
  let read = 0;
  for await (const record of records) {
    if (matches(record)) return record;
    if (++read >= MAX_LOOKUP_RECORDS) return undefined;
  }
  return undefined;
}

/**
 * The API client handlers get. Outside a step, or in a step's first run, it is the client as is.
 * In a step that runs again after an earlier run recorded no result (its process died between
 * the write and the record, or the write threw, e.g. timed out), each write first looks for its
 * own effect and returns it instead of sending: `createBooking` a booking of the same restaurant,
 * date, time, party size and diner; `updateOrderStatus` the order already in (or past) the status;
 * `refundOrder` the order already refunded. This narrows the window; it cannot close it (the
 * upstream has no idempotency key), see docs/handlers.md.
 */
export function stepAwareApi(api: ApiClient, deps: { current: () => StepScope | undefined; mirror: Pick<MirrorStore, "get"> }): ApiClient {
  const recovering = () => {
    const scope = deps.current();
    return scope?.recovery ? scope : undefined;
  };

  // Lookups read whole pages: the fewest calls for MAX_LOOKUP_RECORDS.
  const limit = MAX_LIMIT;
  async function findOrder(id: string): Promise<Order | undefined> {
    // The mirror names the order's restaurant, which narrows the walk; without it, every order.
    const known = await deps.mirror.get("orders", id).catch(() => undefined);
    return firstOf(api.iterateOrders(known ? { restaurantId: known.restaurantId, limit } : { limit }), (o) => o.id === id);
  }
  const findBooking = (input: CreateBookingInput) =>
    firstOf(api.iterateBookings({ restaurantId: input.restaurantId, from: input.date, limit }), (b) => sameBooking(b, input));

  return {
    ...api,
    async createBooking(input) {
      const scope = recovering();
      const found = scope && (await findBooking(input));
      if (!found) return api.createBooking(input);
      scope.logger.warn({ booking: found.id }, "found the booking an earlier run of this step created; not creating another");
      return found;
    },
    async updateOrderStatus(id, status) {
      const scope = recovering();
      const found = scope && (await findOrder(id));
      if (!found || !reached(found.status, status)) return api.updateOrderStatus(id, status);
      scope.logger.warn({ order: id, status: found.status }, "the order is already in or past the status; not sending it again");
      return found;
    },
    async refundOrder(id, reason) {
      const scope = recovering();
      const found = scope && (await findOrder(id));
      if (found?.status !== REFUNDED_STATUS) return api.refundOrder(id, reason);
      scope?.logger.warn({ order: id }, "the order is already refunded; not refunding it again");
      return found;
    },
  };
}

/** The booking `input` would create: same restaurant, day, time, party size and diner. */
export function sameBooking(b: Booking, input: CreateBookingInput): boolean {
  return (
    b.restaurantId === input.restaurantId &&
    b.date.slice(0, 10) === input.date &&
    b.time.slice(0, 5) === input.time.slice(0, 5) &&
    b.partySize === input.partySize &&
    b.diner.name === input.diner.name &&
    b.diner.email.toLowerCase() === input.diner.email.toLowerCase()
  );
}

/** Whether an order in `current` already is in `wanted`, or past it on the forward line. */
export function reached(current: OrderStatus, wanted: SettableOrderStatus): boolean {
  if (current === wanted) return true;
  // The forward line of the state machine (upstream/models.ts); CANCELLED and REFUNDED are off it.
  const forward: readonly OrderStatus[] = ORDER_FORWARD_STEPS;
  const at = forward.indexOf(current);
  const want = forward.indexOf(wanted);
  return at >= 0 && want >= 0 && at > want;
}
