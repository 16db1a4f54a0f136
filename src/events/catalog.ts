import * as z from "zod";

/**
 * The seven events of spec part 6, each inside the assumed envelope. `data` may be the whole
 * resource or only its identifiers, so only `id` and `restaurantId` are required; any other field
 * is kept as sent (and never trusted: sync re-reads the API).
 */
const ref = z.looseObject({ id: z.string().min(1), restaurantId: z.string().min(1) });

const envelope = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.looseObject({
    id: z.string(),
    type: z.literal(type),
    createdAt: z.string().optional(),
    data,
  });

const orderData = ref.extend({ status: z.string().optional(), paidAt: z.string().nullable().optional() });
const bookingData = ref.extend({ status: z.string().optional(), date: z.string().optional() });
const reviewData = ref.extend({ rating: z.number().optional() });
const menuItemData = ref;

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
