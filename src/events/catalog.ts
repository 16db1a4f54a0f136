import * as z from "zod";

import { bookingSchema, menuItemSchema, orderSchema, reviewSchema } from "../upstream/models.js";

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
export type KnownFields<R> = { [K in keyof R as string extends K ? never : number extends K ? never : K]: R[K] };

/** A resource as an event carries it: its ids, any of its other fields, and fields the API does not name. */
export type EventData<R> = { id: string; restaurantId: string } & Partial<Omit<KnownFields<R>, "id" | "restaurantId">> &
  Record<string, unknown>;

const envelope = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.looseObject({
    id: z.string(),
    type: z.literal(type),
    createdAt: z.string().optional(),
    data,
  });

const orderData = eventData(orderSchema);
const bookingData = eventData(bookingSchema);
// Reviews have no endpoint and the spec shows none of their fields; a rating is assumed.
const reviewData = eventData(reviewSchema.extend({ rating: z.number() }));
const menuItemData = eventData(menuItemSchema);

export const eventSchemas = {
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
  createdAt?: string | undefined;
  data?: unknown;
  [key: string]: unknown;
}

export const isKnownEventType = (type: string): type is KnownEventType => Object.hasOwn(eventSchemas, type);

export class EventDataError extends Error {
  readonly code = "invalid_event_data";
  constructor(type: string, detail: string) {
    super(`${type} event does not match its schema: ${detail}`);
    this.name = "EventDataError";
  }
}

/** Validates a known event against its schema (the envelope's `id` is the computed event id). */
export function parseKnownEvent<T extends KnownEventType>(type: T, event: AnyEvent): EventOf<T> {
  const result = eventSchemas[type].safeParse(event);
  if (!result.success) {
    throw new EventDataError(type, result.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; "));
  }
  return result.data as EventOf<T>;
}
