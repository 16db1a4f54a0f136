import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_ACCOUNT } from "../../src/config/defaults.js";
import { openStorage, readEventDetail, readStory, type Storage } from "../../src/mirror/storage.js";
import { createMirrorWriter } from "../../src/mirror/change-outbox.js";
import { MIGRATIONS } from "../../src/mirror/migrations.js";
import { bookingRecord, later, orderRecord, reviewRecord } from "../helpers/mirror-records.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";

/** Wraps a test database (the config is not read: the database is given). */
const storageOf = (database: TestDatabase, account?: string) =>
  openStorage({ dataDir: "", schema: database.schema, operatorQueryTimeoutMs: 5000 }, { database, ...(account ? { account } : {}) });

describe("storage keyed by account: two companies in one database", () => {
  let database: TestDatabase;
  let acme: Storage;
  let other: Storage;
  let t0: Date;
  beforeAll(async () => {
    database = await openTestDatabase(preferredDriver());
    acme = await storageOf(database, "acme");
    other = acme.forAccount("globex");
    // Rows are stored for registered accounts only (0023_account_incarnation): both are registered.
    await sql`insert into accounts (id, api_key, signing_secrets) values ('acme', 'sealed', '{}'), ('globex', 'sealed', '{}')`.execute(
      database.db,
    );
  });
  afterAll(() => database.close());
  beforeEach(async () => {
    await database.truncate();
    await sql`truncate steps, unlisted_records`.execute(database.db);
    t0 = await acme.mirror.clock();
  });

  it("defaults every store to account `default`, and forAccount scopes each store to the account it names", async () => {
    const plain = await storageOf(database);
    expect(plain.account).toBe(DEFAULT_ACCOUNT);
    for (const s of [plain.mirror, plain.eventLog, plain.changeOutbox, plain.steps, plain.checkpoints]) expect(s.account).toBe("default");
    for (const s of [other.mirror, other.eventLog, other.changeOutbox, other.steps, other.checkpoints]) expect(s.account).toBe("globex");
    expect(acme.mirror.account).toBe("acme");
  });

  it("stores no row of an account that is not registered, and stores them again once it is", async () => {
    const initech = acme.forAccount("initech");
    await initech.mirror.upsert("orders", [orderRecord("ord_1")], t0);
    await initech.eventLog.recordAttempt({
      id: "evt_1",
      type: "order.created",
      payload: {},
      status: "handled",
      handlers: {},
      newRound: false,
    });
    await initech.checkpoints.start("full", "orders", { firstImport: true }).catch(() => undefined);
    for (const table of ["orders", "order_items", "events", "handler_attempts", "sync_checkpoints", "change_outbox"]) {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)} where account_id = 'initech'`.execute(
        database.db,
      );
      expect(rows[0]?.n, table).toBe(0);
    }
    // Writing an update of rows it already holds is refused the same way: its rows stay as they were.
    await sql`insert into accounts (id, api_key, signing_secrets) values ('initech', 'sealed', '{}')`.execute(database.db);
    await initech.mirror.upsert("orders", [orderRecord("ord_1", { total: 10 })], t0);
    await sql`delete from accounts where id = 'initech'`.execute(database.db);
    await initech.mirror.upsert("orders", [orderRecord("ord_1", { total: 20 })], later(t0, 1000));
    expect(await initech.mirror.get("orders", "ord_1")).toMatchObject({ total: 10 });
  });

  it("the same order id and restaurant id under two accounts hold each one's own rows, line items included", async () => {
    await acme.mirror.upsert("orders", [orderRecord("ord_1", { total: 10, restaurantId: "rest_1" })], t0);
    // A read earlier than acme's: a guard shared across accounts would refuse it.
    await other.mirror.upsert("orders", [orderRecord("ord_1", { total: 99, restaurantId: "rest_1", items: [] })], later(t0, -1000));
    expect(await acme.mirror.get("orders", "ord_1")).toMatchObject({ total: 10 });
    expect(await other.mirror.get("orders", "ord_1")).toMatchObject({ total: 99 });
    expect((await acme.mirror.list("orders", { restaurantId: "rest_1" })).data.map((o) => o.total)).toEqual([10]);
    expect((await other.mirror.list("orders", { restaurantId: "rest_1" })).data.map((o) => o.total)).toEqual([99]);
    const items = await database.db.selectFrom("order_items").select(["account_id", "id"]).orderBy("account_id").orderBy("id").execute();
    expect(items).toEqual([
      { account_id: "acme", id: "ord_1_i1" },
      { account_id: "acme", id: "ord_1_i2" },
    ]);
    // A change in one account leaves the other's copy and counts alone.
    await other.mirror.upsert("orders", [orderRecord("ord_1", { total: 98, status: "CONFIRMED", items: [] })], later(t0, 1));
    expect(await acme.mirror.get("orders", "ord_1")).toMatchObject({ total: 10, status: "PENDING" });
    expect(await acme.mirror.countOrdersNewer([{ since: new Date(0), status: "CONFIRMED", max: 10 }])).toEqual([0]);
    expect(await other.mirror.countOrdersNewer([{ since: new Date(0), status: "CONFIRMED", max: 10 }])).toEqual([1]);
  });

  it("one account's record is not found under another's, in gets, lists, counts and the record's story", async () => {
    await acme.mirror.upsert("bookings", [bookingRecord("bkg_1")], t0);
    await acme.mirror.upsert("reviews", [reviewRecord("rev_1")], t0);
    expect(await other.mirror.get("bookings", "bkg_1")).toBeUndefined();
    expect(await other.operatorMirror.get("reviews", "rev_1")).toBeUndefined();
    expect(await other.mirror.list("bookings")).toEqual({ data: [], nextCursor: null });
    expect(await other.mirror.all("reviews")).toEqual([]);
    expect(await other.mirror.countBookingsByDay("2026-11-01", "2026-11-30")).toEqual(new Map());
    expect(await other.mirror.lastWriteAt("bookings")).toBeUndefined();
    expect(await acme.mirror.countBookingsByDay("2026-11-01", "2026-11-30")).toEqual(new Map([["2026-11-21", 1]]));
    expect(await readStory(other, "bookings", "bkg_1")).toBeUndefined();
    expect((await readStory(acme, "bookings", "bkg_1"))?.record?.data).toMatchObject({ id: "bkg_1" });
  });

  it("the event log, handler attempts and steps stay per account for the same event id", async () => {
    const run = { attempt: 1, of: 3, startedAt: Date.now(), durationMs: 5 };
    await acme.eventLog.recordAttempt({
      id: "evt_1",
      type: "order.created",
      payload: { from: "acme" },
      status: "handled",
      handlers: { sync: { status: "ok", run } },
    });
    await other.eventLog.recordAttempt({
      id: "evt_1",
      type: "order.created",
      payload: { from: "globex" },
      status: "received",
      handlers: { sync: { status: "failed", error: "503", run } },
    });
    expect(await acme.eventLog.get("evt_1")).toMatchObject({ payload: { from: "acme" }, status: "handled", attempts: 1 });
    expect(await other.eventLog.get("evt_1")).toMatchObject({ payload: { from: "globex" }, status: "received", attempts: 1 });
    expect((await other.eventLog.waiting(undefined, 10)).map((e) => e.id)).toEqual(["evt_1"]);
    expect(await acme.eventLog.waiting(undefined, 10)).toEqual([]);
    expect((await acme.eventLog.query({ status: "received" })).data).toEqual([]);
    expect(await (await storageOf(database)).eventLog.holds("evt_1")).toBe(false);

    await acme.steps.claim({ eventId: "evt_1", handlerKey: "user:order.created", name: "pick" }, 1);
    await acme.steps.complete({ eventId: "evt_1", handlerKey: "user:order.created", name: "pick" }, '"acme"', 1);
    // The same step key in the other account runs afresh rather than getting acme's result.
    expect(await other.steps.claim({ eventId: "evt_1", handlerKey: "user:order.created", name: "pick" }, 1)).toMatchObject({
      state: "run",
      recovery: false,
    });
    const acmeDetail = await readEventDetail(acme, "evt_1");
    expect(acmeDetail?.steps.map((s) => s.status)).toEqual(["done"]);
    expect(acmeDetail?.handlerAttempts.map((a) => a.outcome)).toEqual(["ok"]);
    expect((await readEventDetail(other, "evt_1"))?.handlerAttempts.map((a) => a.outcome)).toEqual(["failed"]);
    expect(await other.steps.forget(["evt_1"])).toBe(1);
    expect(await acme.steps.forEvent("evt_1")).toHaveLength(1);
    expect(await other.eventLog.prune(later(new Date(), 60_000))).toBe(1);
    expect(await acme.eventLog.get("evt_1")).toBeDefined();
  });

  it("checkpoints, change outbox rows and set-aside records stay per account", async () => {
    await acme.checkpoints.start("full", "orders", { firstImport: true });
    expect(await other.checkpoints.get("full", "orders")).toBeUndefined();
    await other.checkpoints.start("full", "orders", { firstImport: false });
    expect((await acme.checkpoints.list()).map((c) => c.firstImport)).toEqual([true]);
    expect((await other.checkpoints.list()).map((c) => c.firstImport)).toEqual([false]);

    const writer = createMirrorWriter(acme.mirror);
    await writer.write("orders", [orderRecord("ord_1")], t0, "webhook");
    expect(await acme.changeOutbox.pending()).toBe(1);
    expect(await other.changeOutbox.pending()).toBe(0);
    // One relay serves the deployment: it sends every account's rows, each naming its account.
    const sent: { account: string }[] = [];
    expect(await other.changeOutbox.relayBatch(10, (rows) => Promise.resolve(void sent.push(...rows)))).toBe(1);
    expect(sent.map((r) => r.account)).toEqual(["acme"]);
    expect(await acme.changeOutbox.pending()).toBe(0);

    await acme.mirror.upsert("reviews", [reviewRecord("rev_bad", { restaurantId: 7 })], t0);
    await acme.mirror.recordUnlisted({
      kind: "orders",
      id: "ord_gone",
      restaurantId: "rest_1",
      eventIds: ["evt_1"],
      firstNotedAt: t0,
      attempts: 3,
    });
    expect((await acme.mirror.rejections()).map((r) => r.id)).toEqual(["rev_bad"]);
    expect((await acme.mirror.unlisted()).map((r) => r.id)).toEqual(["ord_gone"]);
    expect(await other.mirror.rejections()).toEqual([]);
    expect(await other.mirror.unlisted()).toEqual([]);
    // A clean read in the other account clears nothing of acme's.
    await other.mirror.upsert("reviews", [reviewRecord("rev_bad")], t0);
    await other.mirror.upsert("orders", [orderRecord("ord_gone")], t0);
    expect(await acme.mirror.rejections()).toHaveLength(1);
    expect(await acme.mirror.unlisted()).toHaveLength(1);
  });
});

describe("upgrading a database with rows from 0016_event_jobs to 0017_accounts", () => {
  it("files every row under account `default`, where the default stores read them back", async () => {
    const upTo0016 = Object.keys(MIGRATIONS).indexOf("0016_event_jobs") + 1;
    const database = await openTestDatabase(preferredDriver(), { migrations: upTo0016 });
    try {
      // Written as the previous release's code writes them: no account anywhere.
      await sql`insert into orders (id, restaurant_id, type, status, subtotal, tax, tip, total, currency, created_at, raw, read_at)
        values ('ord_1', 'rest_1', 'DINE_IN', 'PENDING', 1, 0, 0, 1, 'EUR', '2026-11-20T10:00:00Z', ${JSON.stringify(orderRecord("ord_1"))}::jsonb, now())`.execute(
        database.db,
      );
      await sql`insert into order_items (order_id, id, menu_item_id, name, quantity, price, position)
        values ('ord_1', 'ord_1_i1', 'mi_1', 'Soup', 1, 8.5, 0)`.execute(database.db);
      await sql`insert into events (id, type, payload) values ('evt_1', 'order.created', '{"data":{"id":"ord_1"}}'::jsonb)`.execute(
        database.db,
      );
      await sql`insert into steps (event_id, handler_key, name, status, attempt) values ('evt_1', 'user:order.created', 'pick', 'started', 1)`.execute(
        database.db,
      );
      await sql`insert into sync_checkpoints (tier, kind, pass_started_at) values ('full', 'orders', now())`.execute(database.db);
      await sql`insert into change_outbox (id, type, payload) values ('chg_1', 'change.order', '{}'::jsonb)`.execute(database.db);
      await sql`insert into rejected_records (kind, id, reason, detail, raw) values ('orders', 'ord_bad', 'invalid_field', 'd', '{}')`.execute(
        database.db,
      );

      const storage = await storageOf(database);
      // 0018 (the accounts registry, a table of its own) and every later one come after it.
      expect(await storage.migrate()).toEqual(Object.keys(MIGRATIONS).slice(upTo0016));
      expect(await storage.mirror.get("orders", "ord_1")).toMatchObject({ id: "ord_1" });
      expect(await storage.eventLog.get("evt_1")).toMatchObject({ type: "order.created" });
      expect(await storage.steps.forEvent("evt_1")).toHaveLength(1);
      expect(await storage.checkpoints.get("full", "orders")).toBeDefined();
      expect(await storage.changeOutbox.pending()).toBe(1);
      expect((await storage.mirror.rejections()).map((r) => r.id)).toEqual(["ord_bad"]);
      expect((await readStory(storage, "orders", "ord_1"))?.timeline.map((e) => e.eventId)).toEqual(["evt_1"]);
      const { rows } = await sql<{ account_id: string }>`select account_id from order_items`.execute(database.db);
      expect(rows).toEqual([{ account_id: DEFAULT_ACCOUNT }]);
      // Another account sees none of it.
      expect(await storage.forAccount("acme").mirror.get("orders", "ord_1")).toBeUndefined();
    } finally {
      await database.close();
    }
  });

  it("leads every primary key and index of the per-company tables with account_id", async () => {
    const database = await openTestDatabase(preferredDriver());
    try {
      const { rows } = await sql<{ table: string; index: string; first: string }>`
        select t.relname as table, i.relname as index, a.attname as first
        from pg_index x
        join pg_class i on i.oid = x.indexrelid
        join pg_class t on t.oid = x.indrelid
        join pg_namespace n on n.oid = t.relnamespace
        left join pg_attribute a on a.attrelid = t.oid and a.attnum = x.indkey[0]
        where n.nspname = ${database.schema} and t.relname not in ('sync_liveness', 'handler_key_renames', 'accounts', 'problems', 'kysely_migration', 'kysely_migration_lock')
        order by 1, 2`.execute(database.db);
      // The exceptions: the GIN index on events.handlers (see 0017_accounts), and the relay's
      // order over every account's changes (0019_outbox_relay_order). Problems are read across
      // every account and the deployment's own (0020_problems): not a per-company table.
      const notLed = rows.filter((r) => r.first !== "account_id").map((r) => r.index);
      expect(notLed).toEqual(["change_outbox_seq_idx", "events_handlers_idx"]);
      expect(rows.length).toBeGreaterThan(25);
    } finally {
      await database.close();
    }
  });
});
