import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { MAX_LOG_LINE_CHARS, MAX_LOG_STRING_CHARS, createLogger } from "../../src/logging/logger.js";

function capture(secrets: string[]) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { lines, logger: createLogger({ secrets, destination }) };
}

describe("createLogger", () => {
  it("replaces a configured secret wherever it appears in a line, also JSON-escaped", () => {
    const { lines, logger } = capture(["whsec_plain_secret", 'se"cr\\et!']);
    logger.error({ err: new Error("bad key whsec_plain_secret in header") }, "failed");
    logger.info({ note: 'value se"cr\\et! leaked' }, "stray field");
    const text = lines.join("");
    expect(text).not.toContain("whsec_plain_secret");
    expect(text).not.toContain(JSON.stringify('se"cr\\et!').slice(1, -1));
    expect((JSON.parse(lines[0]!) as { err: { message: string } }).err.message).toBe("bad key [Redacted] in header");
    expect((JSON.parse(lines[1]!) as { note: string }).note).toBe("value [Redacted] leaked");
  });

  it("redacts known secret-bearing fields even without configured values", () => {
    const { lines, logger } = capture([]);
    logger.info({ headers: { authorization: "Bearer abc", "x-svc-signature": "sha256=00" }, apiKey: "svc_live_x" }, "request");
    const line = JSON.parse(lines[0]!) as { headers: Record<string, string>; apiKey: string };
    expect(line.headers).toEqual({ authorization: "[Redacted]", "x-svc-signature": "[Redacted]" });
    expect(line.apiKey).toBe("[Redacted]");
  });
});

describe("long log lines", () => {
  it("cuts a line with a 5 MB error message to one bounded line that parses and says it was cut", () => {
    const { lines, logger } = capture(["whsec_plain_secret"]);
    const message = "x".repeat(5_000_000);
    logger.error({ err: new Error(message), event: "evt_1" }, "handler failed");
    expect(lines).toHaveLength(1);
    expect(lines[0]!.length).toBeLessThanOrEqual(MAX_LOG_LINE_CHARS);
    expect(lines[0]!.endsWith("\n")).toBe(true);
    const line = JSON.parse(lines[0]!) as { msg: string; event: string; cut: { chars: number }; err: { message: string; stack: string } };
    expect(line).toMatchObject({ msg: "handler failed", event: "evt_1" });
    expect(line.cut.chars).toBeGreaterThan(10_000_000); // message and stack
    expect(line.err.message).toMatch(/^x{8192}…\[cut 4991808 chars\]$/);
    expect(line.err.stack.length).toBeLessThan(9000);
  });

  it("keeps the level, time and message when the cut strings alone are still too long", () => {
    const { lines, logger } = capture([]);
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}`, "y".repeat(10_000)]));
    logger.warn(many, "many long fields");
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(lines[0]!.length).toBeLessThanOrEqual(MAX_LOG_LINE_CHARS);
    expect(line).toMatchObject({ level: 40, msg: "many long fields", cut: { chars: expect.any(Number) as number } });
    expect(line.f0).toBeUndefined();
  });

  it("scrubs a secret before cutting, so a secret at the cut point leaves no half behind", () => {
    const { lines, logger } = capture(["whsec_plain_secret"]);
    // The secret straddles the 8 KiB cut point of the message.
    logger.error({ note: "z".repeat(MAX_LOG_STRING_CHARS - 5) + "whsec_plain_secret" + "z".repeat(MAX_LOG_LINE_CHARS) }, "x");
    expect(lines[0]).not.toContain("whsec_p");
    expect((JSON.parse(lines[0]!) as { note: string }).note).toContain("[Red");
  });

  it("writes ordinary lines as pino serialized them", () => {
    const { lines, logger } = capture([]);
    logger.info({ a: "b" }, "short");
    expect(JSON.parse(lines[0]!)).not.toHaveProperty("cut");
  });
});
