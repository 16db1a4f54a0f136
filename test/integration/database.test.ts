import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createDatabase, DatabaseConfigError, migrateToLatest, scopedToSchema } from "../../src/mirror/database.js";
import { DEFAULT_ACCOUNT } from "../../src/config/defaults.js";
import { alive, DataDirLockedError } from "../../src/mirror/embedded-server.js";
import { EmbeddedServerError } from "../../src/mirror/errors.js";
import { MIGRATIONS } from "../../src/mirror/migrations.js";
import { createLogger } from "../../src/logging/logger.js";
import { captureLogs } from "../helpers/log-capture.js";
import { waitFor } from "../helpers/wait-for.js";
import { openTestDatabase, randomSchema, testDrivers } from "../helpers/postgres.js";

const tempDirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-db-test-"));
  tempDirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

const ALL = Object.keys(MIGRATIONS);

describe.each(testDrivers())("migrations (%s)", (driver) => {
  it("leave no foreign key in the schema: a key's check planned on an empty mirror can read an account's whole list per row", async () => {
    const database = await openTestDatabase(driver, { migrations: 0 });
    try {
      await migrateToLatest(database);
      const { rows } = await sql<{ table_name: string; constraint_name: string }>`
        select table_name, constraint_name from information_schema.table_constraints
        where table_schema = ${database.schema} and constraint_type = 'FOREIGN KEY'`.execute(database.db);
      expect(rows).toEqual([]);
    } finally {
      await database.close();
    }
  });

  it("migrate an empty database (two migrators at once): every table in the configured schema, money numeric, times timestamptz", async () => {
    const database = await openTestDatabase(driver, { migrations: 0 });
    try {
      const applied = await Promise.all([migrateToLatest(database), migrateToLatest(database)]);
      expect(applied.flat().sort()).toEqual(ALL);
      expect(await migrateToLatest(database)).toEqual([]);
      const { rows } = await sql<{ table_name: string; column_name: string; data_type: string }>`
        select table_name, column_name, data_type from information_schema.columns
        where table_schema = ${database.schema} and column_name in ('total', 'price', 'created_at', 'read_at', 'raw', 'allergens', 'received_at')`.execute(
        database.db,
      );
      const types = Object.fromEntries(rows.map((r) => [`${r.table_name}.${r.column_name}`, r.data_type]));
      expect(types).toMatchObject({
        "orders.total": "numeric",
        "order_items.price": "numeric",
        "menu_items.price": "numeric",
        "orders.created_at": "timestamp with time zone",
        "orders.read_at": "timestamp with time zone",
        "orders.raw": "jsonb",
        "menu_items.allergens": "ARRAY",
        "events.received_at": "timestamp with time zone",
      });
      const inPublic = await sql<{
        n: number;
      }>`select count(*)::int as n from information_schema.tables where table_schema = 'public' and table_name = 'orders'`.execute(
        database.db,
      );
      expect(inPublic.rows[0]?.n).toBe(0);
    } finally {
      await database.close();
    }
  });

  it("upgrading from 0001_mirror to latest keeps the data", async () => {
    const database = await openTestDatabase(driver, { migrations: 1 });
    try {
      await database.db
        .insertInto("orders")
        // The table as 0001_mirror made it: no account_id yet (0017_accounts adds it).
        .values({
          id: "ord_1",
          restaurant_id: "r1",
          type: "DINE_IN",
          status: "PAID",
          subtotal: "10.10",
          tax: "0.81",
          tip: "0",
          total: "10.91",
          currency: "EUR",
          created_at: "2026-11-20T10:00:00Z",
          raw: JSON.stringify({ id: "ord_1", total: 10.91 }),
          read_at: new Date(),
        } as never)
        .execute();
      expect(await migrateToLatest(database)).toEqual(ALL.slice(1));
      const order = await database.db.selectFrom("orders").select(["account_id", "id", "total", "raw"]).executeTakeFirstOrThrow();
      expect(order).toEqual({ account_id: DEFAULT_ACCOUNT, id: "ord_1", total: "10.91", raw: { id: "ord_1", total: 10.91 } });
      expect(await database.db.selectFrom("events").selectAll().execute()).toEqual([]);
    } finally {
      await database.close();
    }
  });
});

describe("migrations on a server", () => {
  it("two migrators starting together: one applies everything, the other finds it done", async () => {
    const schema = randomSchema();
    const open = () => createDatabase({ url: inject("databaseUrl"), dataDir: "", schema, poolSize: 2 });
    const [a, b] = await Promise.all([open(), open()]);
    try {
      const applied = await Promise.all([migrateToLatest(a), migrateToLatest(b)]);
      expect(applied.flat().sort()).toEqual(ALL);
      expect(applied.some((list) => list.length === 0)).toBe(true);
    } finally {
      // The schema stays for global setup to drop at the end of the run (see openTestDatabase's close).
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("the migrator's introspection sees its own schema only (another schema's tables are never resolved)", async () => {
    // Kysely's own introspector resolves every table of the database by name: one dropped by
    // another deployment (or test run) between its catalog read and that lookup failed a migration
    // with "relation … does not exist", and the scan grew with every schema on the server.
    const url = inject("databaseUrl");
    const [other, mine] = await Promise.all([
      createDatabase({ url, dataDir: "", schema: randomSchema(), poolSize: 1 }),
      createDatabase({ url, dataDir: "", schema: randomSchema(), poolSize: 1 }),
    ]);
    try {
      await migrateToLatest(other);
      expect(await migrateToLatest(mine)).toEqual(ALL);
      const seen = await scopedToSchema(mine.db, mine.schema).introspection.getTables();
      expect(new Set(seen.map((t) => t.schema))).toEqual(new Set([mine.schema]));
      expect(seen.map((t) => t.name)).toEqual(expect.arrayContaining(["kysely_migration", "events", "orders"]));
      expect(await scopedToSchema(other.db, "no_such_schema").introspection.getSchemas()).toEqual([]);
    } finally {
      await Promise.all([other.close(), mine.close()]);
    }
  });

  it("a bad DATABASE_URL fails with an error that does not echo the password", async () => {
    const database = await createDatabase({ url: "postgres://svc:hunter2-secret@127.0.0.1:1/nope", dataDir: "", schema: randomSchema() });
    const error: unknown = await migrateToLatest(database).catch((e: unknown) => e);
    await database.close();
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).not.toContain("hunter2");
  });
});

describe("database options", () => {
  it.skipIf(!inject("databaseUrl"))(
    "a server's database says it opened once a connection is made, not when the pool is built",
    async () => {
      const logs = captureLogs();
      const logger = createLogger({ level: "info", destination: logs.stream });
      const database = await createDatabase({ url: inject("databaseUrl"), dataDir: "", schema: randomSchema(), logger });
      try {
        expect(logs.text()).not.toContain("database opened");
        await sql`select 1`.execute(database.db);
        expect(logs.records().filter((r) => r.msg === "database opened")).toHaveLength(1);
      } finally {
        await database.close();
      }
    },
  );

  it("refuses a schema that is not a plain identifier, before connecting", async () => {
    for (const schema of ["Svc", "svc;drop", "pg_x", "", "a".repeat(64)]) {
      await expect(createDatabase({ dataDir: "/nonexistent/never-created", schema })).rejects.toBeInstanceOf(DatabaseConfigError);
    }
  });

  it("refuses a URL that is not postgres:// without echoing it", async () => {
    const error = await createDatabase({ url: "mysql://u:hunter2@h/db", dataDir: "", schema: "svc" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatabaseConfigError);
    expect((error as Error).message).not.toContain("hunter2");
  });
});

describe("embedded data directory", () => {
  const template = () => inject("embeddedTemplate");

  it("keeps data across a restart, and a second opener fails naming DATABASE_URL", async () => {
    const dataDir = tempDir();
    const first = await createDatabase({ dataDir, schema: "svc", embeddedTemplate: template() });
    await migrateToLatest(first);
    await first.db
      .insertInto("reviews")
      .values({ account_id: DEFAULT_ACCOUNT, id: "rev_1", restaurant_id: "r1", raw: JSON.stringify({ id: "rev_1" }), read_at: new Date() })
      .execute();
    const second = await createDatabase({ dataDir, schema: "svc" }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(DataDirLockedError);
    expect((second as Error).message).toContain("DATABASE_URL");
    await first.close();

    const again = await createDatabase({ dataDir, schema: "svc" });
    expect(await migrateToLatest(again)).toEqual([]);
    expect(await again.db.selectFrom("reviews").select("id").execute()).toEqual([{ id: "rev_1" }]);
    await again.close();
  });

  it("after its holder is SIGKILLed, the next open stops the server it left running and finds every committed row", async () => {
    const dataDir = tempDir();
    const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/lock-holder.ts", dataDir, "--database", template()], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    const line = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        out += d;
        if (out.includes("\n")) resolve(out.slice(0, out.indexOf("\n")));
      });
      child.once("exit", (code) => reject(new Error(`holder exited ${code}: ${out}`)));
    });
    const [word, , serverPid] = line.split(" ");
    expect(word).toBe("opened");
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
    expect(alive(Number(serverPid))).toBe(true); // the orphan: nothing stopped it

    const database = await createDatabase({ dataDir, schema: "svc" });
    try {
      expect(alive(Number(serverPid))).toBe(false);
      expect(await database.db.selectFrom("reviews").select("id").execute()).toEqual([{ id: "rev_held" }]);
    } finally {
      await database.close();
    }
  });

  it("starts its server again when it dies under the service, and the pools reconnect to it", async () => {
    const dataDir = tempDir();
    const database = await createDatabase({ dataDir, schema: "svc", embeddedTemplate: template() });
    try {
      await migrateToLatest(database);
      const serverPid = Number(readFileSync(join(dataDir, "pgdata", "postmaster.pid"), "utf8").split("\n")[0]);
      process.kill(serverPid, "SIGKILL");
      const serverOf = () => Number(readFileSync(join(dataDir, "pgdata", "postmaster.pid"), "utf8").split("\n")[0]);
      // A new server (its own pid in the pid file) answering a new connection: backends of the
      // killed one may serve a pooled connection for a moment, which proves nothing.
      await waitFor(
        async () => {
          if (serverOf() === serverPid || !alive(serverOf())) return false;
          const { rows } = await sql<{ n: number }>`select 1 as n`.execute(database.db).catch(() => ({ rows: [] as { n: number }[] }));
          return rows[0]?.n === 1;
        },
        { what: "a query on the restarted server", timeoutMs: 20_000 },
      );
      expect(await migrateToLatest(database)).toEqual([]);
    } finally {
      await database.close();
    }
  });

  it("refuses an earlier version's PGlite store with one line saying how to move it aside, and creates nothing", async () => {
    const dataDir = tempDir();
    mkdirSync(join(dataDir, "postgres"));
    const error = await createDatabase({ dataDir, schema: "svc" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EmbeddedServerError);
    expect((error as Error).message).toContain(`mv ${join(dataDir, "postgres")}`);
    expect(readdirSync(dataDir)).toEqual(["postgres"]);
  });
});
