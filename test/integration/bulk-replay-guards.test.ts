import { afterEach, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";
import { replayEvents } from "../../src/worker/replays.js";

// The guards of a bulk replay (worker/replays.ts) through the operator API, on real Redis
// and PostgreSQL. ROLE=web: no worker takes the replay jobs, so what was queued stays countable.
let svc: TestService | undefined;
afterEach(async () => {
  await svc?.stop();
  svc = undefined;
});

const TYPE = "guest.visited";
const HANDLER = "user0:guest.visited";

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  fetch(`${svc!.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

async function failedEvents(service: TestService, count: number, type = TYPE): Promise<void> {
  for (let i = 0; i < count; i++)
    await service.service.eventLog.recordAttempt({
      id: `evt_${type}_${i}`,
      type,
      payload: {},
      status: "failed",
      handlers: { [HANDLER]: { status: "failed" } },
    });
}

interface Progress {
  id: string;
  total: number;
  done: number;
  failed: number;
  withdrawn: number;
  state: string;
}
const progressOf = async (id: string) => (await (await svc!.admin(`/events/replays/${id}`)).json()) as Progress;
const waiting = () => svc!.service.eventsQueue.getWaitingCount();
const filter = { type: TYPE, status: "failed" };

describe("bulk replay guards", () => {
  it("runs one replay per identical filter: a second while it runs answers 409 naming it, queuing nothing", async () => {
    svc = await startService({ ROLE: "web" });
    await failedEvents(svc, 3);
    const first = await call("POST", "/events/replay", { filter });
    expect(first.status).toBe(202);
    const { id } = (await first.json()) as { id: string };
    await waitFor(async () => (await waiting()) === 3, { what: "the first replay's three jobs" });

    // The same filter spelled in another order is the same filter.
    const again = await call("POST", "/events/replay", { filter: { status: "failed", type: TYPE } });
    expect(again.status).toBe(409);
    const refusal = (await again.json()) as { error: { code: string; message: string } };
    expect(refusal.error.code).toBe("replay_running");
    expect(refusal.error.message).toContain(id);
    expect(await waiting()).toBe(3);
    // Another filter is another replay.
    expect((await call("POST", "/events/replay", { filter: { type: TYPE } })).status).toBe(202);
  });

  it("needs confirm (the dry run's count) above BULK_REPLAY_CONFIRM_ABOVE, and refuses a count that changed", async () => {
    svc = await startService({ ROLE: "web", BULK_REPLAY_CONFIRM_ABOVE: "2" });
    await failedEvents(svc, 3);
    const unconfirmed = await call("POST", "/events/replay", { filter });
    expect(unconfirmed.status).toBe(409);
    const body = (await unconfirmed.json()) as { error: { code: string; message: string } };
    expect(body.error).toMatchObject({ code: "confirm_required" });
    expect(body.error.message).toContain('"confirm": 3');
    const stale = await call("POST", "/events/replay", { filter, confirm: 2 });
    expect(stale.status).toBe(409);
    expect(((await stale.json()) as { error: { message: string } }).error.message).toMatch(/matches 3 events now, not 2/);
    expect(await waiting()).toBe(0);

    const confirmed = await call("POST", "/events/replay", { filter, confirm: 3 });
    expect(confirmed.status).toBe(202);
    expect(((await confirmed.json()) as { count: number }).count).toBe(3);
    await waitFor(async () => (await waiting()) === 3, { what: "three replay jobs" });
  });

  it("cancels: DELETE takes the unstarted jobs off the queue, the state reads cancelled, and the filter is free again", async () => {
    svc = await startService({ ROLE: "web" });
    await failedEvents(svc, 3);
    const { id } = (await (await call("POST", "/events/replay", { filter })).json()) as { id: string };
    await waitFor(async () => (await waiting()) === 3, { what: "three replay jobs" });

    const cancel = await call("DELETE", `/events/replays/${id}`);
    expect(cancel.status).toBe(200);
    expect(await cancel.json()).toEqual({ id, total: 3, done: 0, failed: 0, withdrawn: 3, state: "cancelled" });
    expect(await waiting()).toBe(0);
    expect((await progressOf(id)).state).toBe("cancelled");
    expect((await call("POST", "/events/replay", { filter })).status).toBe(202);
    expect((await call("DELETE", "/events/replays/bulk-00000000-0000-0000-0000-000000000000")).status).toBe(404);
  });

  it("stops queuing between events once its stop says so (a cancel while queuing), numbering the jobs it queued", async () => {
    svc = await startService({ ROLE: "web" });
    await failedEvents(svc, 3);
    let asked = 0;
    const queued = await replayEvents(
      { eventLog: svc.service.eventLog, queue: svc.service.eventsQueue },
      { query: { type: TYPE }, bulk: "bulk-stop", stop: () => Promise.resolve(++asked > 1) },
    );
    expect(queued).toBe(1);
    expect((await svc.service.eventsQueue.getWaiting()).map((j) => j.id)).toEqual(["bulk-stop-0"]);
  });

  it("refuses an Idempotency-Key reused with other parameters (422), and answers the same replay for the same ones", async () => {
    svc = await startService({ ROLE: "web" });
    await failedEvents(svc, 2);
    const key = { "idempotency-key": "nightly-2026-11-25" };
    const first = (await (await call("POST", "/events/replay", { filter }, key)).json()) as { id: string };
    const same = (await (await call("POST", "/events/replay", { filter: { status: "failed", type: TYPE } }, key)).json()) as { id: string };
    expect(same.id).toBe(first.id);

    const other = await call("POST", "/events/replay", { filter: { type: TYPE } }, key);
    expect(other.status).toBe(422);
    expect(await other.json()).toMatchObject({ error: { code: "idempotency_key_reused" } });

    const one = { "idempotency-key": "retry-evt-1" };
    expect((await call("POST", `/events/evt_${TYPE}_0/replay`, {}, one)).status).toBe(202);
    const otherEvent = await call("POST", `/events/evt_${TYPE}_1/replay`, {}, one);
    expect(otherEvent.status).toBe(422);
    expect(await otherEvent.json()).toMatchObject({ error: { code: "idempotency_key_reused" } });
  });
});
