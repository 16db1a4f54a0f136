import { describe, expect, it } from "vitest";
import { ConfigError, configValue, loadConfig } from "../../src/config/config.js";

function problems(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message;
  }
  throw new Error("expected a ConfigError");
}

describe("loadConfig", () => {
  it("applies the documented defaults", () => {
    const config = loadConfig({ SIGNING_SECRET: "a,b" });
    expect(config).toMatchObject({
      role: "all",
      port: 3000,
      redisUrl: "redis://127.0.0.1:6379",
      signingSecrets: ["a", "b"],
      maxBodyBytes: 1024 * 1024,
      dedupWindowSeconds: 7 * 24 * 3600,
      logLevel: "info",
    });
  });

  it("bounds slow and greedy clients by default, under the upstream's 10 s answer deadline", () => {
    expect(loadConfig({ SIGNING_SECRET: "a" }).http).toEqual({
      requestTimeoutMs: 10_000,
      headersTimeoutMs: 5_000,
      keepAliveTimeoutMs: 65_000,
      maxConnections: 1024,
      maxHeaderBytes: 8192,
      maxBufferedBodyBytes: 32 * 1024 * 1024,
      bodySourceShare: 0.25,
      bodyTimeoutMs: 5_000,
    });
  });

  it("reads a body within the request timeout: at most it when given, and no more than it by default", () => {
    expect(problems({ SIGNING_SECRET: "a", HTTP_BODY_TIMEOUT_MS: "20000" })).toContain(
      "HTTP_BODY_TIMEOUT_MS must be at most HTTP_REQUEST_TIMEOUT_MS",
    );
    expect(loadConfig({ SIGNING_SECRET: "a", HTTP_REQUEST_TIMEOUT_MS: "1000", HTTP_HEADERS_TIMEOUT_MS: "500" }).http.bodyTimeoutMs).toBe(
      1000,
    );
    expect(loadConfig({ SIGNING_SECRET: "a", HTTP_BODY_TIMEOUT_MS: "700" }).http.bodyTimeoutMs).toBe(700);
  });

  it("refuses a header timeout above the request timeout, and a body budget below one body", () => {
    expect(problems({ SIGNING_SECRET: "a", HTTP_HEADERS_TIMEOUT_MS: "20000" })).toContain(
      "HTTP_HEADERS_TIMEOUT_MS must be at most HTTP_REQUEST_TIMEOUT_MS",
    );
    expect(problems({ SIGNING_SECRET: "a", MAX_BODY_BYTES: "2048", MAX_BUFFERED_BODY_BYTES: "1024" })).toContain(
      "MAX_BUFFERED_BODY_BYTES must be at least MAX_BODY_BYTES",
    );
  });

  it("lets the heap grow 2× past its live set by default; 0 leaves it to V8; refuses what is not a percentage", () => {
    expect(loadConfig({ SIGNING_SECRET: "a" }).heapGrowingPercent).toBe(100);
    expect(loadConfig({ SIGNING_SECRET: "a", HEAP_GROWING_PERCENT: "0" }).heapGrowingPercent).toBe(0);
    expect(problems({ SIGNING_SECRET: "a", HEAP_GROWING_PERCENT: "-5" })).toContain("HEAP_GROWING_PERCENT");
    expect(problems({ SIGNING_SECRET: "a", HEAP_GROWING_PERCENT: "lots" })).toContain("HEAP_GROWING_PERCENT");
  });

  it("names every wrong variable in one message", () => {
    const message = problems({ PORT: "http", MAX_BODY_BYTES: "-1", ROLE: "both", REDIS_URL: "localhost" });
    for (const name of ["PORT", "MAX_BODY_BYTES", "ROLE", "REDIS_URL"]) expect(message).toContain(name);
  });

  it("requires SIGNING_SECRET for the edge but not for a worker", () => {
    expect(problems({})).toContain("SIGNING_SECRET is required");
    expect(loadConfig({ ROLE: "worker" }).signingSecrets).toEqual([]);
  });

  it("refuses empty secrets in the rotation list", () => {
    expect(problems({ SIGNING_SECRET: "one,,two" })).toContain("SIGNING_SECRET");
  });

  it("never echoes a secret value", () => {
    const message = problems({
      SIGNING_SECRET: "s3cret-value,",
      API_KEY: "sk_test_hunter2hunter2",
      API_BASE_URL: "http://x",
      ADMIN_TOKEN: "short-tok",
    });
    expect(message).toContain("API_KEY");
    expect(message).toContain("ADMIN_TOKEN");
    for (const value of ["s3cret-value", "hunter2", "short-tok"]) expect(message).not.toContain(value);
  });

  it("wants API_BASE_URL and API_KEY together", () => {
    expect(problems({ SIGNING_SECRET: "a", API_BASE_URL: "http://127.0.0.1:4010" })).toContain("API_KEY is required");
  });

  it("starts with a variable it no longer reads, whatever its value (the removed budget shares)", () => {
    const config = loadConfig({ SIGNING_SECRET: "a", API_BUDGET_FULL_SHARE: "7", API_BUDGET_ACTIVE_SHARE: "half" });
    expect(config.signingSecrets).toEqual(["a"]);
  });

  it("tells tracing whether the standard OTEL_* environment asks for it (an empty endpoint is unset)", () => {
    expect(loadConfig({ SIGNING_SECRET: "a" }).tracing).toEqual({ requested: false, serviceNamed: false });
    expect(loadConfig({ SIGNING_SECRET: "a", OTEL_EXPORTER_OTLP_ENDPOINT: "" }).tracing.requested).toBe(false);
    const on = loadConfig({ SIGNING_SECRET: "a", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SERVICE_NAME: "edge-eu" });
    expect(on.tracing).toEqual({ requested: true, serviceNamed: true });
  });

  describe("REDIS_CLUSTER", () => {
    const base = { SIGNING_SECRET: "a", REDIS_CLUSTER: "true", REDIS_URL: "redis://10.0.0.5:7000" };

    it("is off by default and leaves the prefix alone", () => {
      expect(loadConfig({ SIGNING_SECRET: "a" })).toMatchObject({ redisCluster: false, queuePrefix: "svc" });
    });

    it("wraps a plain prefix in a hash tag, so each queue's keys share one slot", () => {
      expect(loadConfig(base)).toMatchObject({ redisCluster: true, redisUrl: "redis://10.0.0.5:7000", queuePrefix: "{svc}" });
      expect(loadConfig({ ...base, QUEUE_PREFIX: "orders-prod" }).queuePrefix).toBe("{orders-prod}");
    });

    it("keeps a prefix that already has a tag", () => {
      expect(loadConfig({ ...base, QUEUE_PREFIX: "{svc}" }).queuePrefix).toBe("{svc}");
      expect(loadConfig({ ...base, QUEUE_PREFIX: "eu-{svc}" }).queuePrefix).toBe("eu-{svc}");
    });

    it("refuses a prefix whose braces make no tag", () => {
      for (const prefix of ["{svc", "svc}", "{}svc"])
        expect(problems({ ...base, QUEUE_PREFIX: prefix })).toContain("QUEUE_PREFIX needs a hash tag");
      expect(loadConfig({ SIGNING_SECRET: "a", QUEUE_PREFIX: "{svc" }).queuePrefix).toBe("{svc"); // only checked on a cluster
    });

    it("refuses a database number, which a cluster does not have", () => {
      expect(problems({ ...base, REDIS_URL: "redis://10.0.0.5:7000/2" })).toContain("REDIS_URL may not select a database");
      expect(loadConfig({ ...base, REDIS_URL: "redis://10.0.0.5:7000/0" }).redisCluster).toBe(true);
    });

    it("takes only true or false", () => {
      expect(problems({ ...base, REDIS_CLUSTER: "yes" })).toContain("REDIS_CLUSTER must be true or false");
    });
  });
});

describe("configValue (one variable, for a command that builds no Config)", () => {
  it("parses by the schema, empty as unset, and refuses a wrong value naming only the variable", () => {
    expect(configValue({}, "LOG_LEVEL")).toBe("info");
    expect(configValue({ LOG_LEVEL: "" }, "LOG_LEVEL")).toBe("info");
    expect(configValue({ LOG_LEVEL: "debug" }, "LOG_LEVEL")).toBe("debug");
    expect(() => configValue({ LOG_LEVEL: "loud" }, "LOG_LEVEL")).toThrow(ConfigError);
    expect(() => configValue({ LOG_LEVEL: "loud" }, "LOG_LEVEL")).toThrow(/LOG_LEVEL/);
    expect(() => configValue({ LOG_LEVEL: "loud" }, "LOG_LEVEL")).not.toThrow(/loud/);
  });
});
