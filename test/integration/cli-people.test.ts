import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { describe, expect, inject, it } from "vitest";
import { createEventLog } from "../../src/mirror/event-log.js";
import { createStepStore } from "../../src/mirror/step-store.js";
import { cli } from "../helpers/cli-main.js";
import { failSyncJobs } from "../helpers/failed-jobs.js";
import { openTestDatabase } from "../helpers/postgres.js";

/** One line, no stack frame: what every CLI error prints. */
function expectOneLine(stderr: string, text: string) {
  expect(stderr).toContain(text);
  expect(stderr.trim().split("\n")).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
}

describe("did you mean", () => {
  it("answers an unknown command with the nearest one, in one line, exit 2", async () => {
    const run = await cli(["replai", "--dry-run"], {});
    expect(run.code).toBe(2);
    expectOneLine(run.stderr, 'unknown command "replai"; did you mean replay?');
    expect(run.stdout).toBe("");
  });

  it("keeps a typed word with a newline, or a pasted blob, to one line", async () => {
    const run = await cli(["rep\nlay"], {});
    expect(run.code).toBe(2);
    expectOneLine(run.stderr, 'unknown command "rep\\nlay"');
    const blob = await cli(["x".repeat(5000)], {});
    expectOneLine(blob.stderr, `unknown command "${"x".repeat(80)}…"`);
    const flag = await cli(["replay", "--dry\nrun"], {});
    expectOneLine(flag.stderr, "unknown option --dry\\nrun");
  });

  it("names no command when none is near", async () => {
    const run = await cli(["deploy"], {});
    expect(run.code).toBe(2);
    expectOneLine(run.stderr, 'unknown command "deploy" (svc-webhooks --help lists them)');
  });

  it("answers an unknown flag with the nearest of that command's flags, exit 2", async () => {
    const run = await cli(["replay", "--dryrun"], {});
    expect(run.code).toBe(2);
    expectOneLine(run.stderr, "unknown option --dryrun; did you mean --dry-run?");
    const value = await cli(["reconcile", "--ulr=http://127.0.0.1:1"], {});
    expect(value.code).toBe(2);
    expectOneLine(value.stderr, "unknown option --ulr; did you mean --url?");
  });

  it("refuses --json on a command that answers nothing (serve), as an unknown flag", async () => {
    const run = await cli(["serve", "--json"], {});
    expect(run.code).toBe(2);
    expectOneLine(run.stderr, "unknown option --json");
  });
});

/** The environment of an embedded event log holding one failed guest.visited event. */
async function logWithOneEvent(): Promise<Record<string, string>> {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-clipeople-"));
  const database = await openTestDatabase("embedded", { dataDir });
  await createEventLog(database.db).recordAttempt({
    id: "evt_people",
    type: "guest.visited",
    payload: { id: "evt_people" },
    status: "failed",
    handlers: { "user:guest.visited": { status: "failed", error: "no guest" } },
  });
  await createEventLog(database.db).recordAttempt({
    id: "evt_order",
    type: "order.created",
    payload: { id: "evt_order", type: "order.created", data: { id: "ord_people", restaurantId: "rest_1" } },
    status: "handled",
    handlers: {},
  });
  await createEventLog(database.db).recordAttempt({
    id: "chg_people",
    type: "change.order",
    payload: {
      id: "chg_people",
      type: "change.order",
      data: {
        kind: "order",
        id: "ord_people",
        before: null,
        after: { id: "ord_people", bookingId: null, status: "PENDING" },
        source: "webhook",
      },
    },
    status: "handled",
    handlers: {},
  });
  // Another company's event, with a durable step done and one that failed: a registered company's
  // (its values sealed; this test never opens them), since rows of no registered account are not stored.
  await sql`insert into accounts (id, api_key, signing_secrets) values ('acme', 'sealed', '{}')`.execute(database.db);
  await createEventLog(database.db, { account: "acme" }).recordAttempt({
    id: "evt_acme",
    type: "order.created",
    payload: { id: "evt_acme", type: "order.created", data: { id: "ord_acme", restaurantId: "rest_1" } },
    status: "handled",
    handlers: { "user:order.created": { status: "ok" } },
  });
  const steps = createStepStore(database.db, { account: "acme" });
  const charge = { eventId: "evt_acme", handlerKey: "user:order.created", name: "charge-card" };
  await steps.claim(charge, 1);
  await steps.complete(charge, JSON.stringify({ charged: true }), 12);
  const mail = { eventId: "evt_acme", handlerKey: "user:order.created", name: "send-mail" };
  await steps.claim(mail, 1);
  await steps.fail(mail, "smtp refused\n    at send (mail.ts:1)", 3);
  await database.close();
  return { DATA_DIR: dataDir, DATABASE_SCHEMA: database.schema, REDIS_URL: inject("redisUrl"), QUEUE_PREFIX: "test-clipeople" };
}

describe("a replay that matches nothing", () => {
  it("warns in one line on stderr when --type or --handler names a type nobody sends", async () => {
    const env = await logWithOneEvent();
    const typo = await cli(["replay", "--type", "order.craeted", "--dry-run"], env);
    expect(typo.code, typo.stderr).toBe(0);
    expect(typo.stdout).toBe("0 events would be replayed");
    expectOneLine(typo.stderr, "warning: nobody sends events of type order.craeted to this service; did you mean order.created?");

    const handler = await cli(["replay", "--handler", "user:order.craeted", "--dry-run", "--json"], env);
    expect(handler.code, handler.stderr).toBe(0);
    expect(JSON.parse(handler.stdout)).toEqual({ wouldQueue: 0 });
    expectOneLine(
      handler.stderr,
      "warning: handler user:order.craeted is for type order.craeted, which nobody sends to this service; did you mean order.created?",
    );

    const family = await cli(["replay", "--type", "ordr.*", "--dry-run"], env);
    expectOneLine(family.stderr, "warning: nobody sends events of type ordr.* to this service; did you mean order.*?");
  });

  it("says nothing more for a type that is sent, or when events matched", async () => {
    const env = await logWithOneEvent();
    const none = await cli(["replay", "--type", "booking.created", "--dry-run"], env);
    expect({ code: none.code, stdout: none.stdout, stderr: none.stderr }).toEqual({
      code: 0,
      stdout: "0 events would be replayed",
      stderr: "",
    });
    // guest.visited is nobody's type, but the log holds such an event: it matched, no warning.
    const matched = await cli(["replay", "--type", "guest.visited", "--dry-run"], env);
    expect(matched.code, matched.stderr).toBe(0);
    expect(matched.stdout).toMatch(/^evt_people\tguest\.visited\tfailed\t\S+\n1 event would be replayed$/);
    expect(matched.stderr).toBe("");
  });
});

describe("events show and records show", () => {
  it("tell an event and a record's story in sentences, and as the API's documents with --json", async () => {
    const env = await logWithOneEvent();
    const said = await cli(["events", "show", "evt_people"], env);
    expect(said.code, said.stderr).toBe(0);
    const lines = said.stdout.split("\n");
    expect(lines[0]).toMatch(/^event evt_people \(guest\.visited\), received \S+Z: failed after 1 attempt, the last ended \S+Z$/);
    expect(lines[1]).toBe("handler user:guest.visited: failed (1 attempt): no guest");
    const json = await cli(["events", "show", "evt_people", "--json"], env);
    expect(JSON.parse(json.stdout)).toMatchObject({ id: "evt_people", status: "failed", attempts: 1, handlerAttempts: [], steps: [] });

    const missing = await cli(["events", "show", "evt_nowhere"], env);
    expect(missing.code).toBe(1);
    expectOneLine(missing.stderr, "event_not_found: no event evt_nowhere in the event log");

    const story = await cli(["records", "show", "orders", "ord_people"], env);
    expect(story.code, story.stderr).toBe(0);
    expect(story.stdout.split("\n")).toEqual([
      "orders ord_people of restaurant rest_1: not in the mirror",
      "the log holds 2 events that named it, newest first:",
      // A creation lists the fields the record was created with, not `bookingId null → null`.
      expect.stringMatching(/^ {2}\S+Z change\.order chg_people: handled \(webhook\): created with id "ord_people", status "PENDING"$/),
      expect.stringMatching(/^ {2}\S+Z order\.created evt_order: handled, 1 attempt$/),
    ]);
    const storyJson = await cli(["records", "show", "orders", "ord_people", "--json"], env);
    expect(JSON.parse(storyJson.stdout)).toMatchObject({
      kind: "orders",
      id: "ord_people",
      record: null,
      timeline: [{ eventId: "chg_people", created: true }, { eventId: "evt_order" }],
    });

    const unknown = await cli(["records", "show", "orders", "ord_nowhere"], env);
    expect(unknown.code).toBe(1);
    expectOneLine(unknown.stderr, "record_not_found: nothing is known of orders ord_nowhere");
  });

  it("read another account's event and record with --account, and show durable steps as a table", async () => {
    const env = await logWithOneEvent();
    const elsewhere = await cli(["events", "show", "evt_acme"], env);
    expect(elsewhere.code).toBe(1);
    expectOneLine(elsewhere.stderr, "event_not_found: no event evt_acme in the event log");
    const said = await cli(["events", "show", "evt_acme", "--account", "acme"], env);
    expect(said.code, said.stderr).toBe(0);
    const lines = said.stdout.split("\n");
    expect(lines.slice(2)).toEqual([
      "2 durable steps:",
      expect.stringMatching(/^ {2}handler +step +status +runs +attempt +started +took +result +error$/),
      expect.stringMatching(/^ {2}user:order\.created +charge-card +done +1 +1 +\d\d:\d\d:\d\d\.\d{3} +12 ms +16 B$/),
      expect.stringMatching(/^ {2}user:order\.created +send-mail +failed +1 +1 +\S+ +3 ms +- +smtp refused$/),
    ]);
    const missing = await cli(["events", "show", "evt_people", "--account", "acme"], env);
    expectOneLine(missing.stderr, "event_not_found: no event evt_people in the event log of account acme");

    const story = await cli(["records", "show", "orders", "ord_acme", "--account", "acme"], env);
    expect(story.code, story.stderr).toBe(0);
    expect(story.stdout.split("\n")[0]).toBe("orders ord_acme of restaurant rest_1: not in the mirror");
    const none = await cli(["records", "show", "orders", "ord_acme"], env);
    expectOneLine(none.stderr, "record_not_found: nothing is known of orders ord_acme");
    const bad = await cli(["events", "show", "evt_acme", "--account", "no such"], env);
    expect(bad.code).not.toBe(0);
  });

  it("refuses a kind that is none, naming the nearest, exit 2", async () => {
    const run = await cli(["records", "show", "order", "ord_1"], {});
    expect(run.code).toBe(2);
    expectOneLine(run.stderr, 'no record kind "order"; did you mean orders?');
  });
});

describe("--url at a service that is not this one", () => {
  it("says so in one line, rather than passing its 404 off as this service's refusal", async () => {
    const other = createServer((_req, res) =>
      res
        .writeHead(404, { "content-type": "application/json" })
        .end(JSON.stringify({ error: { code: "not_found", message: "no such endpoint" } })),
    );
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
      const run = await cli(["events", "show", "evt_1", "--url", url], { ADMIN_TOKEN: "token-of-nothing" });
      expect(run.code).toBe(1);
      expectOneLine(run.stderr, `${url} is not an svc-webhooks service (GET /events/evt_1 answered 404); check --url`);
      expect(run.stderr).not.toContain("no such endpoint");
    } finally {
      await new Promise((r) => other.close(r));
    }
  });
});

describe("--json for every command that prints", () => {
  it("migrate and replay list answer one JSON document, and sentences without it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-clipeople-migrate-"));
    const env = { DATA_DIR: dataDir, REDIS_URL: inject("redisUrl"), QUEUE_PREFIX: "test-clipeople-json" };
    const first = await cli(["migrate", "--json"], env);
    expect(first.code, first.stderr).toBe(0);
    const { applied, schema } = JSON.parse(first.stdout) as { applied: string[]; schema: string };
    expect(applied.length).toBeGreaterThan(0);
    const again = await cli(["migrate"], env);
    expect(again.stdout).toBe(`no migration pending; schema ${schema} is up to date`);
    const list = await cli(["replay", "list", "--json"], env);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([]);
    expect(list.stderr).toBe("0 failed jobs in events");
  });
});

describe("replay list", () => {
  it("names each failed sync job's account, job, kind and cause, and --account keeps one account's", async () => {
    const env = { REDIS_URL: inject("redisUrl"), QUEUE_PREFIX: `test-clipeople-sync-${Date.now()}` };
    await failSyncJobs(env.REDIS_URL, env.QUEUE_PREFIX, [
      { name: "refresh", data: { kind: "orders", account: "acme" }, reason: "GET /api/v1/orders answered 401" },
      { name: "reconcile-full", data: {}, reason: "GET /api/v1/bookings failed: ECONNREFUSED" },
    ]);
    const all = await cli(["replay", "list", "--queue", "sync"], env);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stderr).toBe("2 failed jobs in sync");
    expect(all.stdout.split("\n")).toEqual([
      expect.stringMatching(/^\S+\treconcile-full\t-\taccount=default\tattempts=1\t\S+Z\tGET \/api\/v1\/bookings failed: ECONNREFUSED$/),
      expect.stringMatching(/^\S+\trefresh\torders\taccount=acme\tattempts=1\t\S+Z\tGET \/api\/v1\/orders answered 401$/),
    ]);
    const acme = await cli(["replay", "list", "--queue", "sync", "--account", "acme", "--json"], env);
    expect(acme.code, acme.stderr).toBe(0);
    expect(acme.stderr).toBe("1 failed job of account acme in sync");
    expect(JSON.parse(acme.stdout)).toEqual([
      expect.objectContaining({ name: "refresh", account: "acme", kind: "orders", attempts: 1, reason: "GET /api/v1/orders answered 401" }),
    ]);
  });
});
