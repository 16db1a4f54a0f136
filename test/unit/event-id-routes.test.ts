import { pino } from "pino";
import { beforeEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/http/app.js";
import { eventRoutes, operatorActionRoutes, type OperatorActionsPort } from "../../src/http/operator-routes.js";

// The operator routes that take an event id, in memory, mounted in the order mountOperatorRoutes
// uses. The port and the log below record what reached them.
let calls: string[];
const actions: OperatorActionsPort = {
  replayEvent: (id, { handler }) => {
    calls.push(`replayEvent ${id}`);
    return Promise.resolve({ event: id, replay: { id: "r1", handlers: handler ? [handler] : ["user:order.created"] } });
  },
  replayMatching: ({ filter }) => {
    calls.push(`replayMatching ${JSON.stringify(filter)}`);
    return Promise.resolve({ id: "bulk-1", count: 1000 });
  },
  bulkProgress: (id) => Promise.resolve({ id, total: 0, done: 0, failed: 0, withdrawn: 0, state: "done" }),
  cancelBulkReplay: (id) => Promise.resolve({ id, total: 0, done: 0, failed: 0, withdrawn: 0, state: "cancelled" }),
  requestSync: () => Promise.resolve({ job: "j" }),
};
const logger = pino({ level: "silent" });
const app = createApp({
  logger,
  ready: () => Promise.resolve(),
  mount(root) {
    root.route("/", operatorActionRoutes(actions, logger));
    root.route(
      "/events",
      eventRoutes({
        get: (id) => {
          calls.push(`get ${id}`);
          return Promise.resolve({ id });
        },
        query: () => Promise.resolve({ data: [], nextCursor: null }),
      }),
    );
  },
});
const post = (path: string, body: unknown) =>
  app.request(`http://ops.test${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

beforeEach(() => {
  calls = [];
});

describe("operator routes and event ids", () => {
  it.each(["/events/./replay", "/events/%2E/replay", "/events/%2e/replay"])(
    "never reads %s (a single replay's body, after URL normalisation) as a bulk replay of every event",
    async (path) => {
      for (const body of [{}, { handler: "user:order.created" }]) {
        const res = await post(path, body);
        expect(res.status).toBe(400);
        expect(await res.json()).toMatchObject({ error: { code: "invalid_request" } });
      }
      expect(calls).toEqual([]);
    },
  );

  it('replays every event only when the body says "all": true, and answers the count first', async () => {
    const res = await post("/events/replay", { all: true });
    expect(res.status).toBe(202);
    expect(Object.keys((await res.json()) as object)).toEqual(["count", "id"]);
    expect(calls).toEqual(["replayMatching {}"]);
  });

  it.each([{}, { filter: {} }, { filter: { type: undefined } }])(
    "refuses %j as a bulk replay, saying how to ask for every event",
    async (body) => {
      const res = await post("/events/replay", body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/^filter: send a filter .* or "all": true/);
      expect(calls).toEqual([]);
    },
  );

  it('refuses a filter together with "all": true', async () => {
    const res = await post("/events/replay", { all: true, filter: { type: "order.created" } });
    expect(res.status).toBe(400);
    expect(calls).toEqual([]);
  });

  it.each([
    ["a control character", "/events/evt%00x"],
    ["over 200 characters", `/events/${"e".repeat(201)}`],
  ])("refuses an id with %s 400 invalid_event_id without asking the log or queueing", async (_what, path) => {
    for (const res of [await app.request(`http://ops.test${path}`), await post(`${path}/replay`, {})]) {
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "invalid_event_id" } });
    }
    expect(calls).toEqual([]);
  });

  it("addresses every other id, percent-encoded, as one event", async () => {
    for (const id of ["...", "a/b", "%41", "évt 1?#"]) {
      expect((await post(`/events/${encodeURIComponent(id)}/replay`, {})).status).toBe(202);
      expect((await app.request(`http://ops.test/events/${encodeURIComponent(id)}`)).status).toBe(200);
    }
    expect(calls).toEqual(["...", "a/b", "%41", "évt 1?#"].flatMap((id) => [`replayEvent ${id}`, `get ${id}`]));
  });
});
