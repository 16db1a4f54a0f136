import { describe, expect, it } from "vitest";
import { printableRedisUrl } from "../../src/redis/redis.js";
import { operatorUrl } from "../../src/bin/operator.js";
import { replayQueryFromFilter } from "../../src/worker/replays.js";

describe("replayQueryFromFilter", () => {
  it("turns handler into 'the events on which it failed' and retrying into the log's received", () => {
    expect(replayQueryFromFilter({ handler: "user:order.created:0", status: "retrying" })).toEqual({
      handler: "user:order.created:0",
      handlerStatus: "failed",
      status: "received",
    });
  });

  it.each([
    [{ limit: "5" }, "limit"],
    [{ cursor: "abc" }, "cursor"],
    [{ handlerStatus: "ok" }, "handlerStatus"],
    [{ status: "lost" }, "status must be one of received, handled, failed, retrying"],
    [{ since: "last tuesday" }, "since"],
    [{ colour: "red" }, "unknown filter colour"],
  ])("refuses %j naming the field", (filter, message) => {
    expect(() => replayQueryFromFilter(filter)).toThrow(message);
  });
});

describe("operatorUrl", () => {
  it("drops a trailing slash", () => {
    expect(operatorUrl("https://ops.example/")).toBe("https://ops.example");
  });

  it.each(["localhost:3000", "ftp://host", "not a url"])("refuses %s as a usage error", (url) => {
    expect(() => operatorUrl(url)).toThrow("is not an http(s) URL");
  });
});

describe("printableRedisUrl", () => {
  it("keeps host, port and user, never the password", () => {
    expect(printableRedisUrl("redis://user:s3cret-pass@cache.internal:6380/0")).toBe("redis://user:***@cache.internal:6380");
    expect(printableRedisUrl("rediss://:s3cret-pass@cache.internal")).toBe("rediss://:***@cache.internal");
    expect(printableRedisUrl("redis://cache.internal:6380")).toBe("redis://cache.internal:6380");
  });
});
