import * as z from "zod";
import { isDeepStrictEqual } from "node:util";
import { codedError } from "../errors.js";
import { bookingSchema, menuItemSchema, orderSchema, reviewSchema, type Booking, type MenuItem, type Order } from "../upstream/models.js";

/**
 * The seven events of spec part 6, each inside the assumed envelope. `data` may be the whole
 * resource or only its identifiers (spec part 6 does not show it), so only `id` and
 * `restaurantId` are required; every other field the API's schema knows is typed as the API types
 * it, and optional. A field whose value has another type is left out of the typed event rather
 * than failing it: the built-in sync needs only the ids and re-reads the rest, and the event log
 * and '*' handlers keep the payload as sent. Fields the schema does not know are kept, `unknown`.
 */
function eventData<S extends z.core.$ZodLooseShape>(resource: z.ZodObject<S, z.core.$loose>) {
  const fields = Object.entries(resource.shape).map(([name, field]) =>
    name === "id" || name === "restaurantId" ? [name, z.string().min(1)] : [name, (field as z.ZodType).optional().catch(undefined)],
  );
  return z.looseObject(Object.fromEntries(fields)) as unknown as z.ZodType<EventData<z.output<typeof resource>>>;
}

/** The fields a record type names (its `[key: string]: unknown` for unknown fields left aside). */
type KnownFields<R> = { [K in keyof R as string extends K ? never : number extends K ? never : K]: R[K] };

/** A resource as an event carries it: its ids, any of its other fields, and fields the API does not name. */
export type EventData<R> = { id: string; restaurantId: string } & Partial<Omit<KnownFields<R>, "id" | "restaurantId">> &
  Record<string, unknown>;

const envelope = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.looseObject({
    id: z.string(),
    type: z.literal(type),
    /** The company it was delivered for (AnyEvent.account): the worker sets it on every event it runs. */
    account: z.string().optional(),
    createdAt: z.string().optional(),
    data,
  });

const orderData = eventData(orderSchema);
const bookingData = eventData(bookingSchema);
// Reviews have no endpoint and the spec shows none of their fields; a rating is assumed.
const reviewData = eventData(reviewSchema.extend({ rating: z.number() }));
const menuItemData = eventData(menuItemSchema);

const eventSchemas = {
  "booking.created": envelope("booking.created", bookingData),
  "booking.status_changed": envelope("booking.status_changed", bookingData),
  "order.created": envelope("order.created", orderData),
  "order.status_changed": envelope("order.status_changed", orderData),
  "order.refunded": envelope("order.refunded", orderData),
  "review.created": envelope("review.created", reviewData),
  "menu_item.updated": envelope("menu_item.updated", menuItemData),
} as const;

export type KnownEventType = keyof typeof eventSchemas;
export const KNOWN_EVENT_TYPES = Object.keys(eventSchemas) as KnownEventType[];

/** The typed event each known type's handlers receive. */
export type EventOf<T extends KnownEventType> = z.infer<(typeof eventSchemas)[T]>;

/** What '*' handlers receive: any event, known or not. */
export interface AnyEvent {
  id: string;
  type: string;
  /** The company the event was delivered for: `default` (POST /webhooks) or a registered account's id (POST /webhooks/{account}). */
  account?: string;
  createdAt?: string | undefined;
  data?: unknown;
  [key: string]: unknown;
}

export const isKnownEventType = (type: string): type is KnownEventType => Object.hasOwn(eventSchemas, type);

export class EventDataError extends codedError("invalid_event_data") {
  constructor(type: string, detail: string) {
    super(`${type} event does not match its schema: ${detail}`);
  }
}

/** Validates a known event against its schema (the envelope's `id` is the computed event id). */
export function parseKnownEvent<T extends KnownEventType>(type: T, event: AnyEvent): EventOf<T> {
  const result = eventSchemas[type].safeParse(event);
  if (!result.success)
    throw new EventDataError(type, result.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; "));
  return result.data as EventOf<T>;
}

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

/** The reserved namespace of change event types: `change.<kind>`. */
export const CHANGE_TYPE_PREFIX = "change.";
export type ChangeEventType = `change.${ChangeKind}`;
/** The event type of a kind's changes (`change.order`): what the outbox records and `onChange` handles. */
export const changeEventType = <K extends ChangeKind>(kind: K) => `${CHANGE_TYPE_PREFIX}${kind}` as const;
export const CHANGE_EVENT_TYPES = CHANGE_KINDS.map(changeEventType);

/** True for every type in the reserved `change.` namespace, known kind or not. */
export const isChangeEventType = (type: string): boolean => type.startsWith(CHANGE_TYPE_PREFIX);

/**
 * Every event type somebody sends this service today: the upstream's and the mirror's changes. A
 * handler registered for another type, or a replay asking for one, is more often a typo
 * (`order.craeted`) than a plan: both are told so (worker/handlers.ts, the CLI's replay).
 */
export const SENT_EVENT_TYPES: readonly string[] = [...KNOWN_EVENT_TYPES, ...CHANGE_EVENT_TYPES];

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
  /** The company whose mirror changed (`default` or a registered account's id): set on every change event a handler runs. */
  account?: string;
  /** When the change was recorded (the database's clock), ISO 8601. */
  createdAt: string;
  data: ChangeData<K>;
}

/** The typed change event of a `change.*` type. */
export type ChangeEventOf<T extends ChangeEventType> = T extends `change.${infer K extends ChangeKind}` ? ChangeEvent<K> : never;

/** The fields of a kind's record that the API's schema names (what `onChange` may filter on). */
export type ChangeField<K extends ChangeKind> = Extract<keyof KnownFields<ChangeModels[K]>, string>;

/**
 * Which changes to match: `field` changed, from `from` and to `to` when given (compared by value,
 * deep equality), made by one of `source` when given. `from` and `to` have the field's type.
 */
export interface ChangeFilter<K extends ChangeKind, F extends ChangeField<K> = ChangeField<K>> {
  field: F;
  /** The field's value before the write (never matches a record seen for the first time). */
  from?: ChangeModels[K][F];
  /** The field's value after the write. */
  to?: ChangeModels[K][F];
  /**
   * What made the mirror read the record: one source or a list. `["webhook", "reconcile"]` skips
   * backfills and the first import, which report every stored record as a change.
   */
  source?: ChangeSource | readonly ChangeSource[];
}

/** The API's schema of each kind: what a filter's field and values are checked against. */
const MODEL_SCHEMAS: Record<ChangeKind, z.ZodObject> = { order: orderSchema, booking: bookingSchema, menu_item: menuItemSchema };

/** Whether a change matches a filter: the field changed, from `from` (if given) to `to` (if given), by one of `source` (if given). */
export function matchesChange<K extends ChangeKind, F extends ChangeField<K>>(data: ChangeData<K>, filter: ChangeFilter<K, F>): boolean {
  if (!data.changed.includes(filter.field as string)) return false;
  const field = filter.field as keyof ChangeModels[K];
  if ("from" in filter && (data.before === null || !isDeepStrictEqual(data.before[field], filter.from))) return false;
  if ("to" in filter && !isDeepStrictEqual(data.after[field], filter.to)) return false;
  if (filter.source !== undefined && !([] as readonly ChangeSource[]).concat(filter.source).includes(data.source)) return false;
  return true;
}

/** A filter as a JavaScript caller may pass it: checked before use. */
interface UncheckedFilter {
  field: string;
  from?: unknown;
  to?: unknown;
  source?: unknown;
}

/** A value as an error names it: bounded, whatever a JavaScript caller passed. */
const shown = (value: unknown) => JSON.stringify(String(value).slice(0, 64));

/** A filter's mistake (an unknown field, a value the field never takes, an unknown source), or undefined. */
function filterMistake(kind: ChangeKind, given: unknown): string | undefined {
  if (!Object.hasOwn(MODEL_SCHEMAS, kind)) return `the kind ${shown(kind)} is not one of ${CHANGE_KINDS.join(", ")}`;
  if (typeof given !== "object" || given === null) return "the filter is an object { field, from?, to?, source? }";
  const filter = given as UncheckedFilter;
  const shape: Record<string, z.ZodType | undefined> = MODEL_SCHEMAS[kind].shape;
  const field = Object.hasOwn(shape, filter.field) ? shape[filter.field] : undefined;
  if (field === undefined) return `field ${shown(filter.field)} is not one of ${kind}'s: ${Object.keys(shape).join(", ")}`;
  for (const end of ["from", "to"] as const) {
    if (end in filter && !field.safeParse(filter[end]).success)
      return `${end} ${shown(filter[end])} is not a value ${filter.field} can take`;
  }
  const sources: readonly unknown[] = filter.source === undefined ? [] : ([] as readonly unknown[]).concat(filter.source);
  const unknownSource = sources.find((source) => !CHANGE_SOURCES.includes(source as ChangeSource));
  if (unknownSource !== undefined) return `source ${shown(unknownSource)} is not one of ${CHANGE_SOURCES.join(", ")}`;
  return undefined;
}

/** The sources each `onChange` handler with a `source` filter accepts, by the function it returns. */
const SOURCES_OF = new WeakMap<object, readonly ChangeSource[]>();

/**
 * The sources a handler made by `onChange` with a `source` filter accepts; undefined for any other
 * handler (it may receive a change of any source). What the mirror's writers ask, through
 * events/change-listeners.ts, before a change becomes an event.
 */
export function changeSourcesOf(handler: unknown): readonly ChangeSource[] | undefined {
  return typeof handler === "function" ? SOURCES_OF.get(handler) : undefined;
}

type ChangeHandler<K extends ChangeKind, Ctx> = (event: ChangeEvent<K>, ctx: Ctx) => Promise<void> | void;

/**
 * A handler map entry that runs `handler` only for changes matching `filter`. A filter the kind's
 * schema refuses (from JavaScript, where the types do not check it) throws a TypeError at once.
 *
 * @example
 * export default {
 *   ...onChange("order", { field: "status", to: "READY", source: ["webhook", "reconcile"] }, async (event, ctx) =>
 *     notifyKitchen(event.data.after)),
 * };
 *
 * One entry per kind: spreading two `onChange` of the same kind keeps only the last; write one
 * handler with `matchesChange` for several filters of one kind.
 */
export function onChange<K extends ChangeKind, F extends ChangeField<K>, Ctx>(
  kind: K,
  filter: ChangeFilter<K, F>,
  handler: ChangeHandler<K, Ctx>,
): Record<`change.${K}`, ChangeHandler<K, Ctx>> {
  const mistake = filterMistake(kind, filter);
  if (mistake) throw new TypeError(`onChange(${shown(kind)}): ${mistake}`);
  const filtered: ChangeHandler<K, Ctx> = async function onMatchingChange(event, ctx) {
    if (matchesChange(event.data, filter)) await handler(event, ctx);
  };
  if (filter.source !== undefined) SOURCES_OF.set(filtered, ([] as readonly ChangeSource[]).concat(filter.source));
  return { [changeEventType(kind)]: filtered } as Record<`change.${K}`, ChangeHandler<K, Ctx>>;
}
