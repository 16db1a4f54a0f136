import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { createEventLog } from "../../src/mirror/event-log.js";
import { cli } from "../helpers/cli-main.js";
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
