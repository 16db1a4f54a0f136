import { describe, expect, it } from "vitest";
import { decodeEntry, encodeEntry, jobOfEntry } from "../../src/queue/ingest-stream.js";
import { EntryDecodeError } from "../../src/queue/errors.js";
import { redisKeys } from "../../src/redis/redis.js";

const event = {
  id: "evt_1",
  type: "order.created",
  receivedAt: "2026-11-22T12:00:00.000Z",
  payload: { id: "evt_1", type: "order.created", data: { note: 'a "quoted" \u2028 line' } },
};

describe("stream entries", () => {
  it("splices the verified body's text in as the payload, reading back as JSON.stringify would", () => {
    const text = JSON.stringify(event.payload);
    expect(encodeEntry(event, text)).toBe(JSON.stringify(event));
    expect(decodeEntry(encodeEntry(event, text))).toEqual(event);
  });

  it("escapes ids and types that hold quotes or backslashes", () => {
    const odd = { ...event, id: 'evt_"\\x', type: "a\nb" };
    expect(decodeEntry(encodeEntry(odd, JSON.stringify(odd.payload)))).toEqual(odd);
  });

  it.each([
    ["not JSON", "{"],
    ["no payload", '{"id":"a","type":"b","receivedAt":"c"}'],
    ["a number id", '{"id":1,"type":"b","receivedAt":"c","payload":{}}'],
  ])("refuses %s", (_n, text) => {
    expect(() => decodeEntry(text)).toThrow(EntryDecodeError);
  });

  it("names the job after the entry and deduplicates on the entry for the window", () => {
    const job = jobOfEntry("1795447573734-0", encodeEntry(event), 5000);
    expect(job).toEqual({
      name: "order.created",
      data: event,
      opts: { jobId: "1795447573734-0", deduplication: { id: "entry-1795447573734-0", ttl: 5000 } },
    });
    expect(job.opts.jobId).not.toMatch(/:|^\d+$/); // BullMQ refuses both
  });
});

describe("stream keys", () => {
  it("start with the prefix, so a hash-tag prefix puts every key of a script in one cluster slot", () => {
    const keys = redisKeys("{svc}").ingest;
    for (const key of [keys.stream, keys.seen("evt_1")]) expect(key.startsWith("{svc}:")).toBe(true);
  });
});
