import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, secretsOf } from "../../src/config/config.js";
import { createLogger } from "../../src/logging/logger.js";

const base = { SIGNING_SECRET: "whsec_url_test" };

function problems(env: Record<string, string>): string {
  try {
    loadConfig({ ...base, ...env });
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  return "";
}

function logLine(secrets: string[], fields: Record<string, unknown>): string {
  let line = "";
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      line += chunk.toString();
      done();
    },
  });
  createLogger({ secrets, destination }).warn(fields, "connection failed");
  return line;
}

describe("URL passwords in the configuration", () => {
  it("reads a DATABASE_URL password with a bare % as pg does (a literal %), and scrubs it", () => {
    const url = "postgres://svc:50%off%21@db.internal:5432/svc";
    const secrets = secretsOf(loadConfig({ ...base, DATABASE_URL: url }));
    // pg re-encodes such a URL before decoding: the password it sends is "50%off%21" decoded as "50%off!".
    expect(secrets).toEqual(expect.arrayContaining([url, "50%off%21", "50%off!"]));
    const line = logLine(secrets, { err: "password authentication failed", password: "50%off!", url });
    expect(line).not.toContain("50%off");
    expect(line).toContain("[Redacted]");
  });

  it("refuses a DATABASE_URL password pg cannot decode either, in one line naming the variable, not the value", () => {
    const message = problems({ DATABASE_URL: "postgres://svc:s3cr%ffet@db.internal/svc" });
    expect(message).toContain("DATABASE_URL has a password that is not valid percent-encoding");
    expect(message).not.toContain("s3cr");
  });

  it("refuses a REDIS_URL password with a bare % (ioredis would crash with URIError), naming the fix", () => {
    const message = problems({ REDIS_URL: "redis://:50%off@cache.internal:6379" });
    expect(message).toContain("REDIS_URL has a user name or password with a % that is not percent-encoding: write a literal % as %25");
    expect(message).not.toContain("50%off");
  });

  it("puts the REDIS_URL password, as written and decoded, in the scrub list", () => {
    const url = "rediss://default:r3dis%2Fpw%40x@cache.internal:6380";
    const secrets = secretsOf(loadConfig({ ...base, REDIS_URL: url }));
    expect(secrets).toEqual(expect.arrayContaining([url, "r3dis%2Fpw%40x", "r3dis/pw@x"]));
    const line = logLine(secrets, { redis: url, err: "WRONGPASS for r3dis/pw@x" });
    expect(line).not.toMatch(/r3dis/);
    expect(JSON.parse(line)).toMatchObject({ redis: "[Redacted]", err: "WRONGPASS for [Redacted]" });
  });

  it("leaves a URL without a password alone, so its host stays readable in logs", () => {
    const secrets = secretsOf(loadConfig({ ...base, REDIS_URL: "redis://cache.internal:6379" }));
    expect(secrets.some((s) => s.includes("cache.internal"))).toBe(false);
  });
});
