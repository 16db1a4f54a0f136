// Never executed: `npm test` type-checks it, pinning the public handler types (like octokit's).
import {
  ApiNotConfiguredError,
  createService,
  onChange,
  type ChangeEvent,
  type ChangeSource,
  type EventHandler,
  type EventHandlers,
  type HandlerContext,
  type Order,
  type OrderStatus,
  type FinishedEvent,
  type StepError,
  type StepFunction,
} from "../src/index.js";

export const handlers: EventHandlers = {
  "order.status_changed": async (event, ctx: HandlerContext) => {
    const id: string = event.data.id;
    const restaurant: string = event.data.restaurantId;
    const attempt: number = ctx.attempt;
    ctx.logger.info({ id, restaurant, attempt }, "order moved");
    await ctx.mirror.get("orders", id);
    // Aborted at the attempt's deadline (HANDLER_TIMEOUT_MS): hand it to cancellable work.
    const signal: AbortSignal = ctx.signal;
    signal.throwIfAborted();
  },
  "review.created": (event) => {
    // @ts-expect-error data fields are typed: rating is a number when present
    const _rating: string = event.data.rating;
  },
  "*": (event) => {
    const _type: string = event.type;
  },
};

// @ts-expect-error a handler must be a function
export const wrong: EventHandlers = { "order.created": "not a function" };

export const build = async (config: Parameters<typeof createService>[0]["config"]) =>
  createService({ config, logger: undefined as never, handlers });

// Every attempt a worker finishes, on the stream's first attempt or as a job of the events queue.
export const watch = async (config: Parameters<typeof createService>[0]["config"]) => {
  const service = await build(config);
  return service.worker?.onFinished((event: FinishedEvent) => {
    const outcome: "completed" | "failed" | "retried" = event.outcome;
    const via: "stream" | "queue" = event.via;
    console.log(event.id, event.type, outcome, via);
  });
};

// Internal schemas are not part of the public API: their shape may change in any release.
// @ts-expect-error the zod event schemas stay internal
export { eventSchemas } from "../src/index.js";
// @ts-expect-error the zod resource schemas stay internal
export { orderSchema } from "../src/index.js";

// Change events: before/after typed as the upstream models, changed a list of field names.
export const changeHandlers: EventHandlers = {
  "change.order": (event, ctx: HandlerContext) => {
    const id: string = event.id;
    const before: Order | null = event.data.before;
    const after: Order = event.data.after;
    const status: "PENDING" | "CONFIRMED" | "PREPARING" | "READY" | "DELIVERED" | "CANCELLED" | "REFUNDED" = after.status;
    const changed: string[] = event.data.changed;
    const source: ChangeSource = event.data.source;
    const kind: "order" = event.data.kind;
    ctx.logger.info({ id, was: before?.status, status, changed, source, kind }, "order changed");
    // @ts-expect-error before is null on first sight
    const _total: number = event.data.before.total;
  },
  "change.booking": (event) => {
    const _size: number = event.data.after.partySize;
  },
  "change.menu_item": (event) => {
    const _stock: number | null = event.data.after.stock;
    // @ts-expect-error a menu item change carries menu items, not orders
    const _status: string = event.data.after.status;
  },
  "*": (event) => {
    // '*' sees change events too, untyped.
    const _type: string = event.type;
  },
};

// onChange: a handler map entry, its event typed by the kind, its filter typed by the kind's record.
export const ready: EventHandlers = {
  ...onChange("order", { field: "status", from: "PREPARING", to: "READY", source: ["webhook", "reconcile"] }, (event, ctx) => {
    const order: Order = event.data.after;
    const attempt: number = ctx.attempt;
    ctx.logger.info({ order: order.id, attempt }, "ready");
  }),
  // The spec leaves booking statuses open: any string.
  ...onChange("booking", { field: "status", to: "CANCELLED", source: "webhook" }, (event) => {
    const _email: string = event.data.after.diner.email;
  }),
};
// @ts-expect-error the kind must be one of order, booking, menu_item
export const wrongKind = onChange("review", { field: "rating" }, () => undefined);
// @ts-expect-error field is one of the order's fields
export const wrongField = onChange("order", { field: "colour" }, () => undefined);
// @ts-expect-error to is one of the order statuses
export const wrongStatus = onChange("order", { field: "status", to: "READDY" }, () => undefined);
// @ts-expect-error from has the field's type: a total is a number
export const wrongValue = onChange("order", { field: "total", from: "12.50" }, () => undefined);
// @ts-expect-error source is webhook, reconcile or backfill (a catch-up's changes are reconcile's)
export const wrongSource = onChange("order", { field: "status", source: "catch-up" }, () => undefined);
// @ts-expect-error every source of a list is one of them
export const wrongSources = onChange("menu_item", { field: "stock", source: ["webhook", "webhok"] }, () => undefined);
export const stockOut = onChange("menu_item", { field: "stock", to: 0, source: "reconcile" }, () => undefined);
export const wrongEntry: EventHandlers = {
  // @ts-expect-error a change.order handler gets order changes, not booking changes
  "change.order": (_event: ChangeEvent<"booking">) => undefined,
};
export const typedHandler: EventHandler<"change.menu_item"> = (event) => {
  const _price: number = event.data.after.price;
};

// Durable steps: step<T>(name, fn: () => Promise<T>): Promise<T>, the result typed as fn's.
export const stepHandlers: EventHandlers = {
  "booking.created": async (event, ctx: HandlerContext) => {
    const step: StepFunction = ctx.step;
    const booking = await step("create booking", () =>
      ctx.api.createBooking({
        restaurantId: event.data.restaurantId,
        date: "2026-12-24",
        time: "19:30",
        partySize: 2,
        diner: { name: "Ada", email: "ada@example.com" },
      }),
    );
    const code: string = booking.confirmCode;
    const sent: boolean = await ctx.step("notify", () => Promise.resolve(code.length > 0));
    // @ts-expect-error the result has fn's type: a booking has no total
    const _total: number = booking.total;
    // @ts-expect-error fn returns a promise
    await ctx.step("sync", () => 1);
    // @ts-expect-error a step has a name
    await ctx.step(() => Promise.resolve(1));
    console.log(sent);
  },
};
export const stepErrorCode = (
  err: StepError,
): "invalid_step_name" | "duplicate_step" | "step_result_not_json" | "step_result_too_large" | "step_unbound" => err.code;

// Payloads typed from the API's schemas: every field but the ids optional (an event may be thin),
// fields the schema does not know kept as unknown.
export const payloads: EventHandlers = {
  "order.status_changed": (event) => {
    const status: OrderStatus | undefined = event.data.status;
    const total: number | undefined = event.data.total;
    const itemName: string | undefined = event.data.items?.[0]?.name;
    const unknownField: unknown = event.data.loyaltyTier;
    console.log(status, total, itemName, unknownField);
    // @ts-expect-error status is one of the order statuses, not any string
    event.data.status = "READDY";
    // @ts-expect-error a thin event carries only the ids
    const _total: number = event.data.total;
  },
  "booking.created": (event) => {
    const size: number | undefined = event.data.partySize;
    const email: string | undefined = event.data.diner?.email;
    console.log(size, email);
  },
  "menu_item.updated": (event) => {
    const stock: number | null | undefined = event.data.stock;
    console.log(stock);
  },
};

export const misspelled: EventHandlers = {
  // @ts-expect-error a misspelled type is refused at its key
  "order.craeted": () => undefined,
};
export const misspelledSatisfies = {
  "order.created": (event) => console.log(event.data.status),
  // @ts-expect-error with satisfies too
  "change.oder": () => undefined,
} satisfies EventHandlers;

// ctx.api is always there: on a service without an upstream its calls fail with ApiNotConfiguredError.
export const apiHandlers: EventHandlers = {
  "order.created": async (event, ctx) => {
    const page = await ctx.api.listOrders({ restaurantId: event.data.restaurantId, status: "READY" });
    const first: Order | undefined = page.data[0];
    console.log(first?.id);
  },
};
export const apiNotConfigured = (err: ApiNotConfiguredError): "api_not_configured" => err.code;
