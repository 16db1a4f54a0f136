import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { randomSchema } from "../helpers/postgres.js";
import { waitFor } from "../helpers/wait-for.js";
import { sendAll } from "./retrying-sender.js";

const SECRET = "whsec_chaos_hung_handler_8d21";
const ADMIN = "chaos-admin-token-hung-4b7e19";
const EVENTS = 2000;
const HUNG = 4;
const TIMEOUT_MS = 2000;

let dir: string | undefined;
const procs: CliProcess[] = [];
afterAll(() => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill("SIGKILL");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a handler that never returns", () => {
  it(`handles all ${EVENTS} other events while ${HUNG} handlers hang, and fails the hung events for good with their reason`, async () => {
    const databaseUrl = inject("databaseUrl");
    dir = mkdtempSync(join(tmpdir(), "svc-chaos-hung-"));
    const record = join(dir, "handled.txt");
    const handlers = join(dir, "handlers.mjs");
    // Hangs forever on every attempt of the "hung" events (and ignores its signal), records every other one.
    writeFileSync(
      handlers,
      `import { appendFileSync } from "node:fs";
export default { "*": async (event) => {
  if (event.id.startsWith("evt_hung_")) await new Promise(() => {});
  appendFileSync(process.env.CHAOS_RECORD_FILE, event.id + "\\n");
} };\n`,
    );
    const env = {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `chaos-hung-${randomUUID().slice(0, 6)}`,
      SIGNING_SECRET: SECRET,
      ADMIN_TOKEN: ADMIN,
      PORT: "0",
      HANDLERS_MODULE: handlers,
      CHAOS_RECORD_FILE: record,
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: randomSchema(),
      WORKER_CONCURRENCY: "5",
      HANDLER_TIMEOUT_MS: String(TIMEOUT_MS),
      JOB_ATTEMPTS: "3",
      JOB_BACKOFF_MS: "200",
      RECONCILE_INTERVAL_SECONDS: "0",
    };
    const start = async (role: "web" | "worker") => {
      const p = runCli(["serve", "--role", role], env);
      procs.push(p);
      return { proc: p, url: await p.listening() };
    };
    const web = await start("web");
    const worker = await start("worker");

    const body = (id: string) => JSON.stringify({ id, type: "loyalty.points_awarded", data: { id: "pts_1", restaurantId: "rest_1" } });
    const hung = Array.from({ length: HUNG }, (_, i) => ({ id: `evt_hung_${i}_${randomUUID().slice(0, 8)}` }));
    const others = Array.from({ length: EVENTS }, (_, i) => ({ id: `evt_ok_${i}_${randomUUID().slice(0, 8)}` }));
    const started = Date.now();
    // The hung events first, so they take their slots before the rest arrive.
    const hungReport = await sendAll(
      `${web.url}/webhooks`,
      hung.map((e) => ({ ...e, body: body(e.id) })),
      SECRET,
      { concurrency: 1, deadlineMs: 60_000 },
    );
    const report = await sendAll(
      `${web.url}/webhooks`,
      others.map((e) => ({ ...e, body: body(e.id) })),
      SECRET,
      {
        concurrency: 20,
        deadlineMs: 180_000,
      },
    );
    expect(hungReport.accepted.size + report.accepted.size).toBe(HUNG + EVENTS);

    const handled = () => (existsSync(record) ? readFileSync(record, "utf8").split("\n").filter(Boolean) : []);
    await waitFor(
      () => {
        const seen = new Set(handled());
        return [...report.accepted].every((id) => seen.has(id));
      },
      { timeoutMs: 180_000, intervalMs: 250, what: "every other accepted event to be handled" },
    );
    const handledSeconds = (Date.now() - started) / 1000;
    const unique = new Set(handled());
    const losses = [...report.accepted].filter((id) => !unique.has(id)).length;

    // Each hung event: timed out on the stream, twice more in the events queue, then failed for good.
    const logged = async (id: string) =>
      (await (await fetch(`${web.url}/events/${id}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as {
        status: string;
        attempts: number;
        handlers: Record<string, { status: string; error?: string }>;
      };
    const outcomes = await waitFor(
      async () => {
        const all = await Promise.all(hung.map((e) => logged(e.id)));
        return all.every((e) => e.status === "failed") && all;
      },
      { timeoutMs: 120_000, intervalMs: 250, what: "every hung event to fail for good" },
    );
    for (const o of outcomes) {
      expect(o.attempts).toBe(3);
      expect(Object.values(o.handlers).map((h) => h.error)).toEqual([`HandlerTimeoutError: handler timed out after ${TIMEOUT_MS} ms`]);
    }
    console.log(
      `CHAOS hung-handler ${JSON.stringify({
        hung: HUNG,
        slots: 5,
        handlerTimeoutMs: TIMEOUT_MS,
        sent: EVENTS,
        accepted: report.accepted.size,
        non200: report.non200,
        handled: unique.size,
        duplicatesHandled: handled().length - unique.size,
        losses,
        hungFailedForGood: outcomes.length,
        secondsToHandleAll: handledSeconds,
      })}`,
    );
    expect(losses).toBe(0);
    expect(worker.proc.child.exitCode).toBeNull();
  });
});
