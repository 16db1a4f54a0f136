// Never executed: `npm test` type-checks it, pinning the public handler types (like octokit's).
import { createService, type EventHandlers, type HandlerContext } from "../src/index.js";

export const handlers: EventHandlers = {
  "order.status_changed": async (event, ctx: HandlerContext) => {
    const id: string = event.data.id;
    const restaurant: string = event.data.restaurantId;
    const attempt: number = ctx.attempt;
    ctx.logger.info({ id, restaurant, attempt }, "order moved");
    await ctx.mirror.get("orders", id);
  },
  "review.created": (event) => {
    // @ts-expect-error data fields are typed: rating is a number when present
    const rating: string = event.data.rating;
    void rating;
  },
  "*": async (event) => {
    const type: string = event.type;
    void type;
  },
};

// @ts-expect-error a handler must be a function
export const wrong: EventHandlers = { "order.created": "not a function" };

export const build = async (config: Parameters<typeof createService>[0]["config"]) =>
  createService({ config, logger: undefined as never, handlers });

// Internal schemas are not part of the public API: their shape may change in any release.
// @ts-expect-error the zod event schemas stay internal
export { eventSchemas } from "../src/index.js";
// @ts-expect-error the zod resource schemas stay internal
export { orderSchema } from "../src/index.js";
