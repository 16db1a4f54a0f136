import { sql, type Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// The mirror: one table per kind, typed columns for the queries operators run, the whole record
// as read in `raw`, and the guard's bookkeeping (`rank`, `read_at`). Tables are created
// unqualified: the connection's search_path puts them in the configured schema.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

// Ids compare bytewise ("C" collation): lists page by id, and the order must be the same on every
// server and in the embedded database whatever their locale.
const ID = sql`text collate "C"`;

const bookkeeping = (table: ReturnType<AnyDb["schema"]["createTable"]>) =>
  table
    .addColumn("raw", "jsonb", (c) => c.notNull())
    .addColumn("rank", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("read_at", "timestamptz", (c) => c.notNull())
    .addColumn("synced_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`));

export async function up(db: AnyDb): Promise<void> {
  await bookkeeping(
    db.schema
      .createTable("orders")
      .addColumn("id", ID, (c) => c.primaryKey())
      .addColumn("restaurant_id", "text", (c) => c.notNull())
      .addColumn("booking_id", "text")
      .addColumn("type", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("subtotal", "numeric", (c) => c.notNull())
      .addColumn("tax", "numeric", (c) => c.notNull())
      .addColumn("tip", "numeric", (c) => c.notNull())
      .addColumn("total", "numeric", (c) => c.notNull())
      .addColumn("currency", "text", (c) => c.notNull())
      .addColumn("paid_at", "timestamptz")
      .addColumn("refunded_at", "timestamptz")
      .addColumn("created_at", "timestamptz", (c) => c.notNull()),
  ).execute();

  await db.schema
    .createTable("order_items")
    .addColumn("order_id", ID, (c) => c.notNull().references("orders.id").onDelete("cascade"))
    .addColumn("id", ID, (c) => c.notNull())
    .addColumn("menu_item_id", "text", (c) => c.notNull())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("quantity", "integer", (c) => c.notNull())
    .addColumn("price", "numeric", (c) => c.notNull())
    .addColumn("notes", "text")
    .addColumn("position", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("order_items_pkey", ["order_id", "id"])
    .execute();

  await bookkeeping(
    db.schema
      .createTable("bookings")
      .addColumn("id", ID, (c) => c.primaryKey())
      .addColumn("restaurant_id", "text", (c) => c.notNull())
      .addColumn("date", "date", (c) => c.notNull())
      .addColumn("time", "time", (c) => c.notNull())
      .addColumn("party_size", "integer", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("confirm_code", "text", (c) => c.notNull())
      .addColumn("diner_name", "text", (c) => c.notNull())
      .addColumn("diner_email", "text", (c) => c.notNull()),
  ).execute();

  await bookkeeping(
    db.schema
      .createTable("menu_items")
      .addColumn("id", ID, (c) => c.primaryKey())
      .addColumn("restaurant_id", "text", (c) => c.notNull())
      .addColumn("name", "text")
      .addColumn("price", "numeric")
      .addColumn("allergens", sql`text[]`)
      .addColumn("tags", sql`text[]`)
      .addColumn("stock", "integer"),
  ).execute();

  await bookkeeping(
    db.schema
      .createTable("reviews")
      .addColumn("id", ID, (c) => c.primaryKey())
      .addColumn("restaurant_id", "text", (c) => c.notNull()),
  ).execute();

  // Lists page by id within a filter, so each filter column leads an index ending in id.
  const indexes: [table: string, name: string, columns: string[]][] = [
    ["orders", "orders_restaurant_idx", ["restaurant_id", "id"]],
    ["orders", "orders_status_idx", ["status", "id"]],
    ["orders", "orders_created_at_idx", ["created_at"]],
    ["orders", "orders_synced_at_idx", ["synced_at"]],
    ["order_items", "order_items_menu_item_idx", ["menu_item_id"]],
    ["bookings", "bookings_restaurant_idx", ["restaurant_id", "id"]],
    ["bookings", "bookings_status_idx", ["status", "id"]],
    ["bookings", "bookings_date_idx", ["date"]],
    ["bookings", "bookings_synced_at_idx", ["synced_at"]],
    ["menu_items", "menu_items_restaurant_idx", ["restaurant_id", "id"]],
    ["menu_items", "menu_items_synced_at_idx", ["synced_at"]],
    ["reviews", "reviews_restaurant_idx", ["restaurant_id", "id"]],
    ["reviews", "reviews_synced_at_idx", ["synced_at"]],
  ];
  for (const [table, name, columns] of indexes) await db.schema.createIndex(name).on(table).columns(columns).execute();
}

export async function down(db: AnyDb): Promise<void> {
  for (const table of ["order_items", "orders", "bookings", "menu_items", "reviews"]) await db.schema.dropTable(table).execute();
}
