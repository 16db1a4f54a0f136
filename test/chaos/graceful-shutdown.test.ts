import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { parse } from "smol-toml";
import { afterAll, describe, expect, inject, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { EVENTS_QUEUE } from "../../src/queue/events-queue.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { inspectQueues } from "../helpers/inspect-queues.js";

const SECRET = "whsec_chaos_shutdown_01ab";
const killTimeoutS = (parse(readFileSync(new URL("../../fly.toml", import.meta.url), "utf8")) as { kill_timeout: number }).kill_timeout;
let proc: CliProcess | undefined;
afterAll(() => {
  if (proc?.child.exitCode === null) proc.child.kill("SIGKILL");
});

describe("graceful shutdown under load", () => {
  it(`loses no accepted event and exits 0 by its own deadline, inside fly's kill_timeout (${killTimeoutS} s)`, async () => {
    const prefix = `chaos-stop-${randomUUID().slice(0, 6)}`;
    proc = runCli(["serve", "--role", "web"], { REDIS_URL: inject("redisUrl"), QUEUE_PREFIX: prefix, SIGNING_SECRET: SECRET, PORT: "0" });
    const url = await proc.listening();
    const accepted = new Set<string>();
    let refused = 0;
    let signalledAt = 0;
    let n = 0;
    // 30 senders that never retry: whatever got a 200 must be in Redis.
    const sender = async () => {
      for (;;) {
        const id = `evt_stop_${n++}`;
        const body = JSON.stringify({ id, type: "order.created", data: { id: "o", restaurantId: "r" } });
        try {
          const res = await fetch(`${url}/webhooks`, {
            method: "POST",
            body,
            headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, SECRET) },
          });
          await res.arrayBuffer();
          if (res.status === 200) accepted.add(id);
        } catch {
          refused++;
          if (signalledAt) return; // the server stopped accepting
        }
        if (accepted.size >= 2000 && !signalledAt) {
          signalledAt = Date.now();
          proc!.child.kill("SIGTERM");
        }
      }
    };
    await Promise.all(Array.from({ length: 30 }, sender));
    const { code } = await proc.exited;
    const seconds = (Date.now() - signalledAt) / 1000;
    // Exit 0 after "stopped" is the drain finishing before the process's own hard stop, which
    // exits 1 at SHUTDOWN_TIMEOUT_MS + 5 s from the signal (serve.ts); shutdown-deadline.test.ts
    // checks that sum against fly's kill_timeout. The seconds are a figure, not a bound here.
    expect(code).toBe(0);
    await proc.waitForLog("stopped");
    expect(proc.stdout()).not.toContain("shutdown did not finish in time");

    const inspected = inspectQueues(inject("redisUrl"), prefix, [EVENTS_QUEUE]);
    try {
      const stored = await inspected.eventIds(["waiting"]);
      const lost = [...accepted].filter((id) => !stored.has(id));
      console.log(
        `CHAOS graceful-shutdown ${JSON.stringify({ accepted: accepted.size, refusedAfterSignal: refused, lost: lost.length, exitCode: code, secondsToExit: seconds })}`,
      );
      expect(lost).toEqual([]);
    } finally {
      await inspected.close();
    }
  });
});
