import type { Logger } from "pino";
import type { Random } from "./random.js";
import { nextStatus, TERMINAL } from "./state-machine.js";
import type { SandboxStore } from "./store.js";

/** Live traffic for a local run: each tick, one plausible change, through the same actions. */
export function startSimulation(store: SandboxStore, random: Random, intervalMs: number, logger?: Logger): () => void {
  const tick = () => {
    try {
      const open = [...store.orders.values()].filter((o) => !TERMINAL.includes(o.status));
      const roll = random.next();
      if (roll < 0.3 || open.length === 0) store.actions.createOrder({ paid: random.chance(0.7) });
      else if (roll < 0.65) {
        const order = random.pick(open);
        const next = nextStatus(order.status);
        if (next) store.actions.updateOrderStatus(order.id, next);
      } else if (roll < 0.7) store.actions.updateOrderStatus(random.pick(open).id, "CANCELLED");
      else if (roll < 0.75) {
        const paid = [...store.orders.values()].filter((o) => o.paidAt && o.status !== "REFUNDED");
        if (paid.length > 0) store.actions.refundOrder(random.pick(paid).id, "simulated refund");
      } else if (roll < 0.85) {
        const restaurant = random.pick(store.restaurants);
        const date = new Date(Date.now() + random.int(0, 14) * 86_400_000).toISOString().slice(0, 10);
        store.actions.createBooking({
          restaurantId: restaurant.id,
          date,
          time: `${random.int(12, 21)}:${random.pick(["00", "30"])}`,
          partySize: random.int(1, 8),
          diner: { name: "Sim Guest", email: "guest@example.com" },
        });
      } else if (roll < 0.9) {
        const confirmed = [...store.bookings.values()].filter((b) => b.status === "CONFIRMED");
        if (confirmed.length > 0) store.actions.cancelBooking(random.pick(confirmed).id);
      } else if (roll < 0.95) store.actions.createReview();
      else {
        const item = random.pick([...store.menuItems.values()]);
        store.actions.updateMenuItem(item.id, { stock: random.int(0, 40), price: item.price + random.pick([-0.5, 0.5]) });
      }
    } catch (err) {
      logger?.warn({ err: (err as Error).message }, "simulation step failed");
    }
  };
  const timer = setInterval(tick, intervalMs);
  return () => clearInterval(timer);
}
