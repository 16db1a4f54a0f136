import { mkdtempSync } from "node:fs";
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
    const none = await cli(["replay", "--type", "order.created", "--dry-run"], env);
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
