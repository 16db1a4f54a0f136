import { describe, expect, it } from "vitest";
import { candidatesFor, planNextRead, windowPages, type Target } from "../../src/sync/read-plan.js";
import { ORDER_STATES } from "../../src/sync/resources.js";

const NOW = Date.parse("2026-11-24T12:00:00Z");
const order = (id: string, restaurantId: string, status?: string): Target => ({
  id,
  restaurantId,
  candidates: candidatesFor("orders", status === undefined ? {} : { status }, NOW),
  next: 0,
});
const booking = (id: string, restaurantId: string, date?: string): Target => ({
  id,
  restaurantId,
  candidates: candidatesFor("bookings", date === undefined ? {} : { day: Date.parse(date) }, NOW),
  next: 0,
});

describe("candidate reads", () => {
  it("looks for an order in the status it carried, then only in the states the machine can reach from it", () => {
    expect(ORDER_STATES.from("PENDING")).toEqual(["PENDING", "CONFIRMED", "PREPARING", "READY", "DELIVERED", "CANCELLED", "REFUNDED"]);
    expect(ORDER_STATES.from("READY")).toEqual(["READY", "DELIVERED", "CANCELLED", "REFUNDED"]);
    expect(ORDER_STATES.from("DELIVERED")).toEqual(["DELIVERED", "REFUNDED"]);
    expect(ORDER_STATES.from("CANCELLED")).toEqual(["CANCELLED", "REFUNDED"]);
    expect(ORDER_STATES.from("REFUNDED")).toEqual(["REFUNDED"]);
    // A status the spec does not know: no filter can be trusted.
    expect(ORDER_STATES.from("ON_HOLD")).toBeUndefined();
    expect(candidatesFor("orders", { status: "ON_HOLD" }, NOW)).toEqual([{}]);
    expect(candidatesFor("orders", {}, NOW)).toEqual([{}]);
  });

  it("looks for a booking from the day before to the day after its date; no date: from yesterday on, then everything", () => {
    expect(candidatesFor("bookings", { day: Date.parse("2026-03-10T00:00:00.000Z") }, NOW)).toEqual([
      { from: "2026-03-09", to: "2026-03-11" },
    ]);
    expect(candidatesFor("bookings", {}, NOW)).toEqual([{ from: "2026-11-23" }, {}]);
  });
});

describe("the read planner", () => {
  it("serves the ids of several restaurants in one status with one company-wide read", () => {
    const targets = [
      order("o1", "r1", "REFUNDED"),
      order("o2", "r2", "REFUNDED"),
      order("o3", "r3", "REFUNDED"),
      order("o4", "r1", "READY"),
    ];
    const read = planNextRead(targets);
    expect(read).toEqual({ filter: { status: "REFUNDED" }, targets: targets.slice(0, 3) });
    expect(read).not.toHaveProperty("restaurantId");
  });

  it("reads one restaurant's list when only that restaurant holds the ids", () => {
    const targets = [order("o1", "r1", "PREPARING"), order("o2", "r1", "PREPARING"), order("o3", "r2", "READY")];
    expect(planNextRead(targets)).toMatchObject({ restaurantId: "r1", filter: { status: "PREPARING" } });
  });

  it("moves an id on to its next candidate, and is done when every one was tried", () => {
    const target = order("o1", "r1", "DELIVERED");
    expect(planNextRead([target])?.filter).toEqual({ status: "DELIVERED" });
    target.next++;
    expect(planNextRead([target])?.filter).toEqual({ status: "REFUNDED" });
    target.next++;
    expect(planNextRead([target])).toBeUndefined();
  });

  it("merges booking windows of nearby days into one read, and keeps days a month apart apart, whatever the counts say", () => {
    const near = [booking("b1", "r1", "2026-03-10"), booking("b2", "r2", "2026-03-12"), booking("b3", "r3", "2026-03-14")];
    const far = booking("b4", "r1", "2026-07-01");
    // A mirror still importing holds no bookings for these days: its counts are not trusted across a month.
    const read = planNextRead([...near, far], { bookingsByDay: new Map() });
    expect(read?.filter).toEqual({ from: "2026-03-09", to: "2026-03-15" });
    expect(read?.targets.map((t) => t.id)).toEqual(["b1", "b2", "b3"]);
    expect(read?.restaurantId).toBeUndefined();
    expect(planNextRead([far])).toEqual({ restaurantId: "r1", filter: { from: "2026-06-30", to: "2026-07-02" }, targets: [far] });
  });

  it("plans over 300,000 ids of one window without spreading them into a call (which throws past ~100k arguments)", () => {
    const many = Array.from({ length: 300_000 }, (_, i) => booking(`b${i}`, i % 2 === 0 ? "r1" : "r2", "2026-03-11"));
    const read = planNextRead([booking("first", "r3", "2026-03-10"), ...many]);
    expect(read?.filter).toEqual({ from: "2026-03-09", to: "2026-03-12" });
    expect(read?.targets).toHaveLength(300_001);
  });

  it("merges booking windows at most 7 days wide when the mirror counts no bookings on those days", () => {
    const spread = [booking("b1", "r1", "2026-03-10"), booking("b2", "r2", "2026-03-14"), booking("b3", "r3", "2026-03-20")];
    for (const prices of [{}, { bookingsByDay: new Map<string, number>() }]) {
      const read = planNextRead(spread, prices);
      expect(read?.filter).toEqual({ from: "2026-03-09", to: "2026-03-15" });
      expect(read?.targets.map((t) => t.id)).toEqual(["b1", "b2"]);
    }
  });

  it("merges booking windows while the merged one costs no more pages than the two apart, by the mirror's bookings per day", () => {
    const spread = [booking("b1", "r1", "2026-03-10"), booking("b2", "r2", "2026-03-20"), booking("b3", "r3", "2026-03-30")];
    // 5 a day: the whole span (22 days, 110 bookings) is two pages, as much as two windows apart.
    const few = new Map(Array.from({ length: 40 }, (_, i) => [`2026-03-${String(i + 1).padStart(2, "0")}`, 5] as const));
    expect(planNextRead(spread, { bookingsByDay: few })?.filter).toEqual({ from: "2026-03-09", to: "2026-03-31" });
    // 60 a day: each 3-day window is two pages, and merging only adds pages.
    const many = new Map([...few.keys()].map((d) => [d, 60] as const));
    expect(planNextRead(spread, { bookingsByDay: many })?.targets.map((t) => t.id)).toEqual(["b1"]);
    expect(windowPages({ from: "2026-03-01", to: "2026-03-20" }, few)).toBe(1);
    expect(windowPages({ from: "2026-03-01", to: "2026-03-21" }, few)).toBe(2);
  });

  it("reads a booking window per restaurant when those reads cost fewer pages together than the company-wide one", () => {
    const two = [booking("b1", "r1", "2026-03-10"), booking("b2", "r2", "2026-03-10"), booking("b3", "r2", "2026-03-11")];
    const days = ["2026-03-09", "2026-03-10", "2026-03-11", "2026-03-12"];
    // 60 a day company-wide: the window (09 to 12) is three pages; each restaurant's own, a few bookings: one page each.
    const company = new Map(days.map((d) => [d, 60] as const));
    const own = new Map(days.map((d) => [d, 2] as const));
    const perRestaurant = new Map([
      ["r1", own],
      ["r2", own],
    ]);
    // Two restaurant reads (2 pages) instead of one company read of 3: the restaurant with more ids first.
    const read = planNextRead(two, { bookingsByDay: company, bookingsByRestaurantDay: perRestaurant });
    expect(read).toMatchObject({ restaurantId: "r2", filter: { from: "2026-03-09", to: "2026-03-12" } });
    expect(read?.targets.map((t) => t.id)).toEqual(["b2", "b3"]);
    // A quiet company (5 a day: one page): one company read serves both restaurants.
    const quiet = new Map(days.map((d) => [d, 5] as const));
    expect(planNextRead(two, { bookingsByDay: quiet, bookingsByRestaurantDay: perRestaurant })?.restaurantId).toBeUndefined();
    // Without the restaurants' counts, company-wide as before.
    expect(planNextRead(two, { bookingsByDay: company })?.restaurantId).toBeUndefined();
  });

  it("bets on the first page of the newest orders when it likely holds at least as many ids as any status read", () => {
    const recent = (id: string, restaurantId: string, status: string, company: number): Target => ({
      ...order(id, restaurantId, status),
      recent: { company, restaurant: company },
    });
    const burst = [recent("o1", "r1", "PENDING", 3), recent("o2", "r2", "CONFIRMED", 10), recent("o3", "r1", "PREPARING", 40)];
    const old = recent("o4", "r2", "DELIVERED", 5000);
    expect(planNextRead([...burst, old])).toEqual({ filter: {}, targets: burst, recent: true });
    // Missed once: not bet on again this round; the status candidates follow.
    for (const t of burst) t.recentTried = true;
    expect(planNextRead([...burst, old])?.recent).toBeUndefined();
    // One recent id alone: the bet too (a status read would miss it if it moved on meanwhile).
    const lone = recent("o5", "r1", "READY", 1);
    expect(planNextRead([lone])).toEqual({ restaurantId: "r1", filter: {}, targets: [lone], recent: true });
  });
});

describe("reads priced by estimated pages", () => {
  /** A refunded order `company` deep in the company's REFUNDED list and `restaurant` deep in its restaurant's. */
  const priced = (id: string, restaurantId: string, company: number, restaurant: number): Target => ({
    ...order(id, restaurantId, "REFUNDED"),
    sortKey: NOW,
    depth: { "REFUNDED||": { company, restaurant } },
  });

  it("reads deep ids of a few restaurants in their own lists, not down the company's", () => {
    // Company-wide: 6 pages to reach the deeper one (3 for the other alone); per restaurant: one page each.
    const targets = [priced("o1", "r1", 520, 10), priced("o2", "r2", 250, 3)];
    expect(planNextRead(targets)).toEqual({ restaurantId: "r1", filter: { status: "REFUNDED" }, targets: [targets[0]] });
    expect(planNextRead([targets[1]!])).toEqual({ restaurantId: "r2", filter: { status: "REFUNDED" }, targets: [targets[1]] });
  });

  it("splits: shallow ids company-wide in one page, a deep one in its restaurant", () => {
    const shallow = [priced("o1", "r1", 5, 1), priced("o2", "r2", 40, 2), priced("o3", "r3", 80, 3)];
    const deep = priced("o4", "r4", 1500, 20);
    expect(planNextRead([...shallow, deep])).toEqual({ filter: { status: "REFUNDED" }, targets: shallow });
    expect(planNextRead([deep])?.restaurantId).toBe("r4");
  });

  it("keeps the company-wide read when it is as cheap (an empty mirror) or an id has no known depth", () => {
    const empty = [priced("o1", "r1", 0, 0), priced("o2", "r2", 0, 0)];
    expect(planNextRead(empty)).toEqual({ filter: { status: "REFUNDED" }, targets: empty });
    const unknown = [priced("o1", "r1", 520, 10), order("o2", "r2", "REFUNDED")];
    expect(planNextRead(unknown)).toEqual({ filter: { status: "REFUNDED" }, targets: unknown });
  });
});
