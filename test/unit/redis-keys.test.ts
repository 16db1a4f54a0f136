import calculateSlot from "cluster-key-slot";
import { describe, expect, it } from "vitest";
import { redisKeys } from "../../src/redis/redis.js";
import { hashTagOf } from "../../src/base/hash-tag.js";

const slotsOf = (keys: string[]) => new Set(keys.map((k) => calculateSlot(k)));

/** Every group of keys one Lua script (or one future script) touches together. */
function scriptKeyGroups(prefix: string): Record<string, string[]> {
  const keys = redisKeys(prefix);
  const budget = keys.upstreamBudget("0123456789abcdef");
  return {
    "rate limiter acquire": [
      budget.log,
      budget.pause,
      budget.next,
      budget.activeLog,
      budget.fullLog,
      budget.webhookWaiters,
      budget.activeWaiters,
      budget.lentLog,
    ],
    "rate limiter state": [budget.log, budget.pause, budget.activeLog, budget.fullLog],
    "refresh scheduler note, forget read, defer": [keys.syncOf().pendingRefresh("orders")],
    "active pass lease (hold, renew, let go)": [keys.syncOf().activePassLease],
    "ingest (stream + seen keys)": [
      keys.ingest.stream,
      keys.ingest.seen("evt_1"),
      keys.ingest.seen("evt_{odd}"),
      keys.ingest.seen("evt:2"),
    ],
  };
}

describe("Redis key names", () => {
  for (const prefix of ["svc", "{svc}", "test-1a2b", "{test-1a2b}"]) {
    it(`puts every key one script touches in one cluster slot (prefix ${prefix})`, () => {
      for (const [script, keys] of Object.entries(scriptKeyGroups(prefix))) {
        expect(slotsOf(keys).size, script).toBe(1);
      }
    });
  }

  it("lets a hash-tagged prefix put every key of a deployment in the queue's slot", () => {
    const all = Object.values(scriptKeyGroups("{svc}")).flat();
    // BullMQ's own keys under the same prefix, e.g. the events queue and its dedup keys.
    expect(slotsOf([...all, "{svc}:events:wait", "{svc}:events:de:evt_1", "{svc}:sync:delayed"]).size).toBe(1);
  });

  it("spreads groups over slots when the prefix has no tag", () => {
    const keys = redisKeys("svc");
    expect(calculateSlot(keys.upstreamBudget("k1").log)).not.toBe(calculateSlot(keys.upstreamBudget("k2").log));
    expect(calculateSlot(keys.syncOf("acme").pendingRefresh("orders"))).not.toBe(
      calculateSlot(keys.syncOf("globex").pendingRefresh("orders")),
    );
  });

  it("keeps default's sync keys where they were before accounts, and puts each account's apart under its own tag", () => {
    const keys = redisKeys("svc");
    expect(keys.syncOf("default").pendingRefresh("orders")).toBe(keys.syncOf().pendingRefresh("orders"));
    expect(keys.syncOf().activePassLease).toBe("svc:sync:active-pass-lease");
    expect(keys.syncOf("acme")).toMatchObject({ activePassLease: "svc:sync:{acct:acme}:active-pass-lease" });
    expect(keys.syncOf("acme").pendingRefresh("orders")).toBe("svc:sync:{acct:acme}:pending-ids:orders");
    expect(keys.syncOf("acme").refreshPace("orders")).not.toBe(keys.syncOf().refreshPace("orders"));
  });

  it("keeps today's names for the budget and the pending ids", () => {
    const keys = redisKeys("svc");
    expect(keys.upstreamBudget("k1")).toEqual({
      log: "svc:upstream:{k1}:log",
      pause: "svc:upstream:{k1}:pause",
      next: "svc:upstream:{k1}:next",
      activeLog: "svc:upstream:{k1}:log:active",
      fullLog: "svc:upstream:{k1}:log:full",
      lentLog: "svc:upstream:{k1}:log:lent",
      webhookWaiters: "svc:upstream:{k1}:waiting:webhook",
      activeWaiters: "svc:upstream:{k1}:waiting:active",
    });
    expect(keys.syncOf().pendingRefresh("orders")).toBe("svc:sync:pending-ids:orders");
  });
});

describe("hashTagOf", () => {
  it("follows Redis: the first {…} when not empty, else none", () => {
    expect(hashTagOf("{svc}:events")).toBe("svc");
    expect(hashTagOf("a:{b}:{c}")).toBe("b");
    expect(hashTagOf("svc:{}:{x}")).toBeUndefined();
    expect(hashTagOf("{svc:events")).toBeUndefined();
    expect(hashTagOf("svc")).toBeUndefined();
    // Agrees with the cluster's own slot function.
    expect(calculateSlot("x{svc}y")).toBe(calculateSlot("svc"));
  });
});
