import { buildBooking, buildOrder, GUEST_NAMES } from "./build-records.js";
import { money } from "./money.js";
import type { StoreState } from "./store-state.js";
import type { Booking } from "./types.js";
import { expectDefined } from "../expect-defined.js";

const DISHES = ["Margherita", "Ramen", "Caesar salad", "Bibimbap", "Falafel wrap", "Tiramisu", "Pho", "Burger", "Dal", "Paella"];
const ALLERGENS = ["gluten", "dairy", "egg", "nuts", "soy", "fish"];
const TAGS = ["vegan", "vegetarian", "spicy", "new", "chef-pick"];

/** Restaurant number `r`'s menu of `count` items; emits nothing. */
function seedMenu(state: StoreState, r: number, count: number) {
  const { random } = state;
  for (let m = 0; m < count; m++) {
    state.putMenuItem({
      id: state.newId("mi"),
      restaurantId: `rest_${r}`,
      name: expectDefined(DISHES[(r + m) % DISHES.length], "an index within DISHES"),
      description: "House favourite",
      price: money(6 + random.int(0, 1800) / 100),
      currency: "EUR",
      allergens: ALLERGENS.filter(() => random.chance(0.3)),
      tags: TAGS.filter(() => random.chance(0.25)),
      stock: random.chance(0.5) ? random.int(0, 40) : null,
      updatedAt: state.stamp(),
    });
  }
}

/** Restaurants and their menus only (a seeded history fills in the rest); emits nothing. */
export function seedRestaurants(state: StoreState, count: number, menuItemsEach: number) {
  for (let r = 1; r <= count; r++) {
    state.restaurants.push({ id: `rest_${r}`, name: `Restaurant ${r}` });
    seedMenu(state, r, menuItemsEach);
  }
}

/** Five bookings of restaurant `r` around today, the last one cancelled. */
function seedBookings(state: StoreState, r: number): Booking[] {
  const { random } = state;
  const rbookings: Booking[] = [];
  for (let b = 0; b < 5; b++) {
    const day = new Date(state.now().getTime() + (b - 2) * 86_400_000).toISOString().slice(0, 10);
    const booking = buildBooking(state, {
      restaurantId: `rest_${r}`,
      date: day,
      time: `${18 + (b % 4)}:${b % 2 ? "30" : "00"}`,
      partySize: random.int(1, 8),
      diner: { name: random.pick(GUEST_NAMES), email: `guest${r}${b}@example.com` },
    });
    if (b === 4) booking.status = "CANCELLED";
    state.putBooking(booking);
    rbookings.push(booking);
  }
  return rbookings;
}

/** A few restaurants with menus, orders in every state and bookings; emits nothing. */
export function seedSample(state: StoreState, count: number) {
  const path = ["PENDING", "CONFIRMED", "PREPARING", "READY", "DELIVERED"] as const;
  for (let r = 1; r <= count; r++) {
    state.restaurants.push({ id: `rest_${r}`, name: `Restaurant ${r}` });
    seedMenu(state, r, 6);
    const rbookings = seedBookings(state, r);
    for (let o = 0; o < 12; o++) {
      const order = buildOrder(state, {
        restaurantId: `rest_${r}`,
        paid: o % 3 !== 0,
        bookingId: o < 2 ? expectDefined(rbookings[o], "a seeded booking").id : null,
      });
      if (o < 10) order.status = expectDefined(path[o % path.length], "an index within path");
      else if (o === 10) order.status = "CANCELLED";
      else {
        order.paidAt ??= order.createdAt;
        order.status = "REFUNDED";
        order.refundedAt = state.stamp();
      }
      state.putOrder(order);
    }
  }
}
