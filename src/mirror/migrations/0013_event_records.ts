import { sql, type Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// The record each event names, so "everything about order ord_X" is an index lookup rather than a
// scan of every payload: `record_kind` as the mirror names kinds (orders, bookings, menu-items,
// reviews) from the type's family (a change.* event: from its data.kind), `record_id` from
// data.id (orders also data.orderId), at most 200 characters; NULL when the event names none.
// Generated columns: PostgreSQL fills them on every insert and, as the column is added, for every
// row already logged (a rewrite of the table, once). (0010–0012 are other changes of the release.)

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

const KIND = sql`case
    when type like 'order.%' then 'orders'
    when type like 'booking.%' then 'bookings'
    when type like 'menu\\_item.%' then 'menu-items'
    when type like 'review.%' then 'reviews'
    when type like 'change.%' then case payload -> 'data' ->> 'kind'
      when 'order' then 'orders' when 'booking' then 'bookings' when 'menu_item' then 'menu-items' end
  end`;
const NAMED_ID = sql`coalesce(payload -> 'data' ->> 'id', case when type like 'order.%' then payload -> 'data' ->> 'orderId' end)`;
const ID = sql`case when (${KIND}) is not null and length(${NAMED_ID}) between 1 and 200 then ${NAMED_ID} end`;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable("events")
    .addColumn("record_kind", "text", (c) => c.generatedAlwaysAs(KIND).stored())
    .execute();
  await db.schema
    .alterTable("events")
    .addColumn("record_id", sql`text collate "C"`, (c) => c.generatedAlwaysAs(ID).stored())
    .execute();
  // A record's timeline (newest first) and "which kind holds this id" (the console's search).
  await db.schema
    .createIndex("events_record_idx")
    .on("events")
    .expression(sql`record_id, record_kind, received_at desc, id desc`)
    .where(sql.ref("record_id"), "is not", null)
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex("events_record_idx").execute();
  await db.schema.alterTable("events").dropColumn("record_id").dropColumn("record_kind").execute();
}
