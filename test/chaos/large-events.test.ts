import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { randomSchema } from "../helpers/postgres.js";
import { rssMiB } from "../helpers/rss.js";
import { waitFor } from "../helpers/wait-for.js";
import { sendAll } from "./retrying-sender.js";

const SECRET = "whsec_chaos_large_events_51c0";
const LARGE = 300;
/** The VM fly.toml asks for. */
const VM_MIB = 512;

let dir: string | undefined;
const procs: CliProcess[] = [];
afterAll(() => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill("SIGKILL");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("large events", () => {
  it(`handles ${LARGE} events of 1 MB queued ahead of a small one with the worker's RSS under ${VM_MIB} MiB`, async () => {
    const databaseUrl = inject("databaseUrl");
    dir = mkdtempSync(join(tmpdir(), "svc-chaos-large-"));
    const record = join(dir, "handled.txt");
    const handlers = join(dir, "handlers.mjs");
    writeFileSync(
      handlers,
      `import { appendFileSync } from "node:fs";
export default { "*": async (event) => { appendFileSync(process.env.CHAOS_RECORD_FILE, event.id + "\\n"); } };\n`,
    );
    const env = {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `chaos-large-${randomUUID().slice(0, 6)}`,
      SIGNING_SECRET: SECRET,
      PORT: "0",
      HANDLERS_MODULE: handlers,
      CHAOS_RECORD_FILE: record,
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: randomSchema(),
      RECONCILE_INTERVAL_SECONDS: "0",
      LOG_LEVEL: "warn",
    };
    const web = runCli(["serve", "--role", "web"], { ...env, LOG_LEVEL: "info" });
    procs.push(web);
    const url = await web.listening();
    const blob = "x".repeat(1_000_000 - 200);
    const body = (id: string, large: boolean) =>
      JSON.stringify({ id, type: "loyalty.points_awarded", data: { id: "pts_1", restaurantId: "rest_1", ...(large ? { blob } : {}) } });
    const events = [
      ...Array.from({ length: LARGE }, (_, i) => ({ id: `evt_large_${i}_${randomUUID().slice(0, 8)}`, large: true })),
      { id: `evt_small_${randomUUID().slice(0, 8)}`, large: false },
    ].map((e) => ({ id: e.id, body: body(e.id, e.large) }));
    // All queued before the worker starts: it meets the whole backlog at once, as after an outage.
    const report = await sendAll(`${url}/webhooks`, events, SECRET, { concurrency: 8, deadlineMs: 120_000 });
    expect(report.accepted.size).toBe(events.length);

    // V8 sizes its heap from the machine's memory: on the 512 MB VM about 256 MB of old space,
    // here (a large machine) gigabytes, where garbage would pile up unbounded. Give the worker the VM's.
    const worker = runCli(["serve", "--role", "worker"], { ...env, LOG_LEVEL: "info", NODE_OPTIONS: "--max-old-space-size=256" });
    procs.push(worker);
    await worker.listening();
    const pid = worker.child.pid!;
    let peakMiB = 0;
    let restarts = 0;
    const handled = () => (existsSync(record) ? readFileSync(record, "utf8").split("\n").filter(Boolean) : []);
    await waitFor(
      () => {
        if (worker.child.exitCode !== null) restarts++;
        else peakMiB = Math.max(peakMiB, rssMiB(pid));
        return new Set(handled()).size === events.length || worker.child.exitCode !== null;
      },
      { timeoutMs: 240_000, intervalMs: 20, what: "every event to be handled" },
    );
    const unique = new Set(handled());
    console.log(
      `CHAOS large-events ${JSON.stringify({ large: LARGE, bytesEach: events[0]!.body.length, handled: unique.size, workerExited: worker.child.exitCode, workerPeakRssMiB: Math.round(peakMiB), vmMiB: VM_MIB })}`,
    );
    expect(restarts).toBe(0);
    expect(unique.size).toBe(events.length);
    expect(peakMiB).toBeLessThan(VM_MIB);
  });
});
