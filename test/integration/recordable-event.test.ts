import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnyEvent } from "../../src/events/catalog.js";
import { redisKeys } from "../../src/redis/redis.js";
import { nextFinished } from "../helpers/job-events.js";
import { startService, type TestService } from "../helpers/service.js";

// Every input of issue 21 item 3, signed and posted to a real edge with a worker and an event log
// behind it: each is either refused with a specific 4xx before any 200, or recorded and handled.
// Never a 200 followed by an event that retries, dead-letters and is trimmed away unrecorded.
let svc: TestService;
const seen: AnyEvent[] = [];
beforeAll(async () => {
  // Two attempts, short backoff: today's code fails such an event for good in well under a second.
  svc = await startService({ JOB_ATTEMPTS: "2", JOB_BACKOFF_MS: "20", MAX_BODY_BYTES: String(2 << 20) }, [
    { "*": (e: AnyEvent) => void seen.push(e) },
  ]);
});
afterAll(async () => {
  await svc.stop();
});

/** Entries ever appended to the ingest stream (XINFO's entries-added): what the edge stored. */
async function entriesAdded(): Promise<number> {
  const info = (await svc.redis.xinfo("STREAM", redisKeys(svc.prefix).ingest.stream).catch(() => [])) as unknown[];
  return Number(info[info.indexOf("entries-added") + 1] ?? 0);
}

let n = 0;
const uniqueId = () => `evt_text_${Date.now()}_${n++}`;

/** Posts the JSON text as is (escapes such as \u0000 stay escapes on the wire, as a sender signs them). */
async function deliverAndSettle(text: string, id: string) {
  const settled = Promise.race([
    nextFinished(svc.service.worker!, "completed", (e) => e.id === id),
    nextFinished(svc.service.worker!, "failed", (e) => e.id === id),
  ]);
  const res = await svc.deliver(text);
  expect(res.status).toBe(200);
  return { settled: await settled, logged: await svc.service.eventLog.get(id) };
}

describe("a payload string the database's jsonb cannot hold as is", () => {
  it.each([
    [
      "a \\u0000 in a data string",
      String.raw`{"name":"Ann\u0000Lee","tags":["ok","\u0000"]}`,
      { name: "Ann\u0000Lee", tags: ["ok", "\u0000"] },
    ],
    ["a lone high surrogate", String.raw`{"name":"broken \ud800 pair"}`, { name: "broken \ud800 pair" }],
    ["a lone low surrogate", String.raw`{"note":"\udc00"}`, { note: "\udc00" }],
    ["a \\u0000 in a key", String.raw`{"a\u0000b":1}`, { "a\u0000b": 1 }],
  ])("accepts %s, handles it once and records it losslessly", async (_what, dataText, data) => {
    const id = uniqueId();
    const { settled, logged } = await deliverAndSettle(`{"id":"${id}","type":"guest.note_added","data":${dataText}}`, id);
    expect(settled.outcome).toBe("completed");
    expect(logged).toMatchObject({ id, type: "guest.note_added", status: "handled", attempts: 1 });
    expect(logged?.payload).toEqual({ id, type: "guest.note_added", data });
    expect(seen.filter((e) => e.id === id).map((e) => (e as { data?: unknown }).data)).toEqual([data]);
  });

  it("keeps a payload that merely looks like the stored escape form as sent", async () => {
    const id = uniqueId();
    const text = `{"id":"${id}","type":"guest.note_added","data":{"x":1}}`;
    const { logged } = await deliverAndSettle(text, id);
    expect(logged?.payload).toEqual(JSON.parse(text));
  });
});

describe("an id or type that cannot be an identifier", () => {
  const long = "x".repeat(201);
  it.each([
    ["an id over 200 characters", { id: `evt_${long}`, type: "order.created" }, "invalid_event_id"],
    ["a 1 MB type", { id: "evt_big_type", type: "t".repeat(1 << 20) }, "invalid_event_type"],
    ["a type over 200 characters", { id: "evt_long_type", type: `order.${long}` }, "invalid_event_type"],
    ["a \\u0000 in the id", { id: "evt_\u0000", type: "order.created" }, "invalid_event_id"],
    ["a control character in the type", { id: "evt_ctl_type", type: "order.\u001b[31mcreated" }, "invalid_event_type"],
    ["a lone surrogate in the id", { id: "evt_\ud800", type: "order.created" }, "invalid_event_id"],
    ["a lone surrogate in the type", { id: "evt_sur_type", type: "order.\udfff" }, "invalid_event_type"],
  ])("refuses %s with 400 and a specific code, storing nothing", async (_what, envelope, code) => {
    const before = await entriesAdded();
    const res = await svc.deliver({ ...envelope, data: {} });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe(code);
    // The answer names the rule, never echoes the value back.
    expect(body.error.message.length).toBeLessThan(200);
    expect(await entriesAdded()).toBe(before);
    // No log line carries the value either: a 1 MB type must not become a 1 MB line.
    expect(Math.max(...svc.logs.lines.map((l) => l.length))).toBeLessThan(4096);
  });

  it("accepts an id and a type of exactly 200 characters", async () => {
    const id = `evt_${"i".repeat(196)}`;
    const type = `x.${"t".repeat(198)}`;
    const settled = nextFinished(svc.service.worker!, "completed", (e) => e.id === id);
    expect((await svc.deliver({ id, type, data: {} })).status).toBe(200);
    await settled;
    expect(await svc.service.eventLog.get(id)).toMatchObject({ id, type, status: "handled" });
  });
});
