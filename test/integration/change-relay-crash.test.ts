import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import type { Database } from "../../src/mirror/database.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { TEST_SECRET } from "../helpers/edge.js";
import { openDatabaseOfEnv, randomSchema } from "../helpers/postgres.js";
import { waitFor } from "../helpers/wait-for.js";

// Two worker processes must share one database: only a PostgreSQL server allows that (the
// embedded store is one process only).
const databaseUrl = inject("databaseUrl");
if (!databaseUrl)
  console.warn(
    "change-relay-crash: skipped — needs two processes on one database, and this run has no PostgreSQL server (install postgresql or set TEST_DATABASE_URL)",
  );

const procs: CliProcess[] = [];
let sandbox: Sandbox | undefined;
let database: Database | undefined;
afterEach(async () => {
  for (const p of procs.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await sandbox?.close();
  sandbox = undefined;
  // Its schema stays for global setup to drop at the end of the run (see openTestDatabase's close).
  await database?.close();
  database = undefined;
});

describe.skipIf(!databaseUrl)("change events survive a worker killed between the mirror write and the relay", () => {
  it("a second worker relays the outbox rows the first one left, with the same change ids", async () => {
    sandbox = createSandbox({ delivery: { retryDelaysMs: [50, 100, 200] } });
    const apiUrl = await sandbox.listen();
    const dir = mkdtempSync(join(tmpdir(), "svc-change-crash-"));
    const changesFile = join(dir, "changes.ndjson");
    const handlersModule = join(dir, "handlers.mjs");
    // A user's handlers module: appends every change event it gets (needs nothing from the package).
    writeFileSync(
      handlersModule,
      `import { appendFileSync } from "node:fs";
export default {
  "*": (event) => {
    if (event.type.startsWith("change.")) appendFileSync(process.env.CHANGES_FILE, JSON.stringify({ id: event.id, type: event.type, record: event.data.id, source: event.data.source }) + "\\n");
  },
};
`,
    );
    const env = {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-crash-${randomUUID().slice(0, 8)}`,
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: randomSchema(),
      SIGNING_SECRET: TEST_SECRET,
      API_BASE_URL: apiUrl,
      API_KEY: sandbox.apiKey,
      RECONCILE_INTERVAL_SECONDS: "0",
      SYNC_DEBOUNCE_MS: "50",
      JOB_LOCK_MS: "1000",
      HOST: "127.0.0.1",
      PORT: "0",
      LOG_LEVEL: "debug", // "mirror changes recorded" is a debug line
      HANDLERS_MODULE: handlersModule,
      CHANGES_FILE: changesFile,
    };

    // The first process writes the mirror but never relays (CHANGE_RELAY_INTERVAL_MS=0): its
    // changes stay in the outbox, exactly where a crash right after the write leaves them.
    const first = runCli(["serve"], { ...env, CHANGE_RELAY_INTERVAL_MS: "0" });
    procs.push(first);
    const url = await first.listening();
    sandbox.addWebhook({ url: `${url}/webhooks`, secret: TEST_SECRET });
    const order = sandbox.state.orders().find((o) => o.status === "PENDING")!;
    sandbox.actions.updateOrderStatus(order.id, "CONFIRMED");
    await first.waitForLog("mirror changes recorded");
    first.child.kill("SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");

    database = await openDatabaseOfEnv(env);
    const left = await database.db.selectFrom("change_outbox").select(["id", "type", "payload"]).orderBy("seq").execute();
    const orderChange = left.find((r) => r.payload.id === order.id);
    expect(orderChange, "the order's change is in the outbox").toBeDefined();
    expect(orderChange).toMatchObject({ type: "change.order", payload: { source: "webhook", after: { status: "CONFIRMED" } } });
    expect(existsSync(changesFile)).toBe(false);

    // A second worker (the relay on) sends what the first one left, under the same ids.
    const second = runCli(["serve", "--role", "worker"], env);
    procs.push(second);
    const seen = await waitFor(
      () => {
        if (!existsSync(changesFile)) return false;
        const lines = readFileSync(changesFile, "utf8")
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as { id: string; record: string; source: string });
        const ids = new Set(lines.map((l) => l.id));
        return left.every((r) => ids.has(r.id)) ? lines : false;
      },
      { timeoutMs: 20_000, what: "every outbox change to reach the second worker's handlers" },
    );
    expect(seen.find((l) => l.record === order.id)).toEqual({
      id: orderChange!.id,
      type: "change.order",
      record: order.id,
      source: "webhook",
    });
    expect(await database.db.selectFrom("change_outbox").select("id").execute()).toEqual([]);
    second.child.kill("SIGTERM");
    expect((await second.exited).code).toBe(0);
  });
});
