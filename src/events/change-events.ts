import { isDeepStrictEqual } from "node:util";
import type { Booking, MenuItem, Order } from "../upstream/models.js";

/**
 * Change events: produced by the mirror, not by the upstream. One per mirror write that changed a
 * stored record, with the record before and after the write. Their types are reserved: the edge
 * refuses a delivery whose type starts with `change.`.
 */

/** The records a change event can carry, by the event's `kind`. */
export interface ChangeModels {
  order: Order;
  booking: Booking;
  menu_item: MenuItem;
}
export type ChangeKind = keyof ChangeModels;
export const CHANGE_KINDS = ["order", "booking", "menu_item"] as const satisfies readonly ChangeKind[];

/**
 * What made the mirror read the record: `webhook` (a refresh an event asked for, or a sweep that
 * found a record an event had already named), `reconcile` (the scheduled sweep found a change no
 * event named: a missed webhook) or `backfill`.
 */
export type ChangeSource = "webhook" | "reconcile" | "backfill";
export const CHANGE_SOURCES = ["webhook", "reconcile", "backfill"] as const satisfies readonly ChangeSource[];

export const CHANGE_TYPE_PREFIX = "change.";
export type ChangeEventType = `change.${ChangeKind}`;
export const CHANGE_EVENT_TYPES = CHANGE_KINDS.map((k) => `change.${k}` as const);

/** True for every type in the reserved `change.` namespace, known kind or not. */
export const isChangeEventType = (type: string): boolean => type.startsWith(CHANGE_TYPE_PREFIX);

export interface ChangeData<K extends ChangeKind = ChangeKind> {
  kind: K;
  id: string;
  restaurantId: string;
  /** The stored record before the write; null when the mirror had never seen it. */
  before: ChangeModels[K] | null;
  /** The record as written. */
  after: ChangeModels[K];
  /** Top-level field names whose values differ (every field of `after` on first sight), sorted. */
  changed: string[];
  source: ChangeSource;
}

export interface ChangeEvent<K extends ChangeKind = ChangeKind> {
  /** The change id (`chg_…`): the same on every delivery of this change; use it for idempotency. */
  id: string;
  type: `change.${K}`;
  /** When the change was recorded (the database's clock), ISO 8601. */
  createdAt: string;
  data: ChangeData<K>;
}

/** The typed change event of a `change.*` type. */
export type ChangeEventOf<T extends ChangeEventType> = T extends `change.${infer K extends ChangeKind}` ? ChangeEvent<K> : never;

/** Which fields of a change to match; `from` and `to` compare by value (deep equality). */
export interface ChangeFilter<K extends ChangeKind> {
  field: Extract<keyof ChangeModels[K], string> | (string & {});
  /** The field's value before the write (never matches a record seen for the first time). */
  from?: unknown;
  /** The field's value after the write. */
  to?: unknown;
}

/** Whether a change matches a filter: the field changed, from `from` (if given) to `to` (if given). */
export function matchesChange<K extends ChangeKind>(data: ChangeData<K>, filter: ChangeFilter<K>): boolean {
  if (!data.changed.includes(filter.field)) return false;
  const field = filter.field as keyof ChangeModels[K];
  if ("from" in filter && (data.before === null || !isDeepStrictEqual(data.before[field], filter.from))) return false;
  if ("to" in filter && !isDeepStrictEqual(data.after[field], filter.to)) return false;
  return true;
}

type ChangeHandler<K extends ChangeKind, Ctx> = (event: ChangeEvent<K>, ctx: Ctx) => Promise<void> | void;

/**
 * A handler map entry that runs `handler` only for changes matching `filter`.
 *
 * @example
 * export default {
 *   ...onChange("order", { field: "status", to: "READY" }, async (event, ctx) => notifyKitchen(event.data.after)),
 * };
 *
 * One entry per kind: spreading two `onChange` of the same kind keeps only the last; write one
 * handler with `matchesChange` for several filters of one kind.
 */
export function onChange<K extends ChangeKind, Ctx>(
  kind: K,
  filter: ChangeFilter<K>,
  handler: ChangeHandler<K, Ctx>,
): Record<`change.${K}`, ChangeHandler<K, Ctx>> {
  const filtered: ChangeHandler<K, Ctx> = async function onMatchingChange(event, ctx) {
    if (matchesChange(event.data, filter)) await handler(event, ctx);
  };
  return { [`change.${kind}`]: filtered } as Record<`change.${K}`, ChangeHandler<K, Ctx>>;
}
