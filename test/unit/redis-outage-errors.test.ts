import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { warnUnlessOutage } from "../../src/redis/redis.js";
import { captureLogs } from "../helpers/log-capture.js";

const coded = (message: string, code: string) => Object.assign(new Error(message), { code });

describe("a queue's or worker's error listener", () => {
  it("leaves Redis being away to the outage lines, and warns of every other error", () => {
    const logs = captureLogs();
    const listen = warnUnlessOutage(pino({ level: "warn" }, logs.stream), "sync worker error");
    listen(coded("connect ECONNREFUSED 127.0.0.1:6379", "ECONNREFUSED"));
    listen(new Error("Connection is closed."));
    listen(coded("read ECONNRESET", "ECONNRESET"));
    listen(new Error("Missing lock for job 7. moveToFinished"));
    expect(logs.records().map((r) => [r.msg, r.err])).toEqual([["sync worker error", "Missing lock for job 7. moveToFinished"]]);
  });
});
