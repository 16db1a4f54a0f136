import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/logging/logger.js";

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
