import { sql, type Kysely } from "kysely";
import type { DatabaseSchema } from "../../src/mirror/database.js";
import type { Booking, MenuItem, Order } from "../../src/sandbox/records.js";

/** A decimal as text without trailing zeros: '12.30' and 12.3 both read "12.3" (no float on the SQL side). */
export const decimal = (value: string | number): string => {
  const text = typeof value === "number" ? String(value) : value;
  return text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text;
};

/**
 * The mirror as SQL holds it in its typed columns (not `raw`), orders with their line items,
 * next to the same shape made from the sandbox's records: what a `psql` user would see.
 */
export async function sqlMirror(db: Kysely<DatabaseSchema>) {
  const [orders, items, bookings, menuItems] = await Promise.all([
    db.selectFrom("orders").selectAll().orderBy("id").execute(),
    db.selectFrom("order_items").selectAll().orderBy("order_id").orderBy("position").execute(),
    db
      .selectFrom("bookings")
      .select([
        "id",
        "restaurant_id",
        "status",
        "party_size",
        "confirm_code",
        "diner_name",
        "diner_email",
        sql<string>`to_char(date, 'YYYY-MM-DD')`.as("day"),
        sql<string>`to_char(time, 'HH24:MI')`.as("hhmm"),
      ])
      .orderBy("id")
      .execute(),
    db.selectFrom("menu_items").selectAll().orderBy("id").execute(),
  ]);
  return {
    orders: orders.map((o) => ({
      id: o.id,
      restaurantId: o.restaurant_id,
      bookingId: o.booking_id,
      type: o.type,
      status: o.status,
      subtotal: decimal(o.subtotal),
      tax: decimal(o.tax),
      tip: decimal(o.tip),
      total: decimal(o.total),
      currency: o.currency,
      paidAt: o.paid_at?.toISOString() ?? null,
      refundedAt: o.refunded_at?.toISOString() ?? null,
      createdAt: o.created_at.toISOString(),
      items: items
        .filter((i) => i.order_id === o.id)
        .map((i) => ({
          id: i.id,
          menuItemId: i.menu_item_id,
          name: i.name,
          quantity: i.quantity,
          price: decimal(i.price),
          notes: i.notes,
        })),
    })),
    bookings: bookings.map((b) => ({
      id: b.id,
      restaurantId: b.restaurant_id,
      status: b.status,
      partySize: b.party_size,
      confirmCode: b.confirm_code,
      diner: { name: b.diner_name, email: b.diner_email },
      date: b.day,
      time: b.hhmm,
    })),
    menuItems: menuItems.map((m) => ({
      id: m.id,
      restaurantId: m.restaurant_id,
      name: m.name,
      price: m.price === null ? null : decimal(m.price),
      allergens: m.allergens,
      tags: m.tags,
      stock: m.stock,
    })),
  };
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The sandbox's records in the shape of `sqlMirror`. */
export function sandboxAsSql(state: { orders(): Order[]; bookings(): Booking[]; menuItems(): MenuItem[] }) {
  return {
    orders: [...state.orders()].sort(byId).map((o) => ({
      id: o.id,
      restaurantId: o.restaurantId,
      bookingId: o.bookingId,
      type: o.type,
      status: o.status,
      subtotal: decimal(o.subtotal),
      tax: decimal(o.tax),
      tip: decimal(o.tip),
      total: decimal(o.total),
      currency: o.currency,
      paidAt: o.paidAt,
      refundedAt: o.refundedAt,
      createdAt: o.createdAt,
      items: o.items.map((i) => ({
        id: i.id,
        menuItemId: i.menuItemId,
        name: i.name,
        quantity: i.quantity,
        price: decimal(i.price),
        notes: i.notes,
      })),
    })),
    bookings: [...state.bookings()].sort(byId).map((b) => ({
      id: b.id,
      restaurantId: b.restaurantId,
      status: b.status,
      partySize: b.partySize,
      confirmCode: b.confirmCode,
      diner: b.diner,
      date: b.date.slice(0, 10),
      time: b.time,
    })),
    menuItems: [...state.menuItems()].sort(byId).map((m) => ({
      id: m.id,
      restaurantId: m.restaurantId,
      name: m.name,
      price: decimal(m.price),
      allergens: m.allergens,
      tags: m.tags,
      stock: m.stock,
    })),
  };
}
