import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, secretsOf } from "../../src/config/config.js";

const base = { SIGNING_SECRET: "s".repeat(32) };
const SECRET = `whsec_${randomBytes(32).toString("base64")}`;
const URL_WITH_TOKEN = "https://hooks.slack.com/services/T0/B0/tok3n";

/** The configuration error's message for `env`, or undefined when it loads. */
function problemOf(env: Record<string, string>): string | undefined {
  try {
    loadConfig({ ...base, ...env });
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
}

describe("ALERT_WEBHOOK_URL, ALERT_SIGNING_SECRET, ALERT_FORMAT", () => {
  it("are off by default: no URL, standard format", () => {
    expect(loadConfig(base).alerts).toEqual({ format: "standard" });
  });

  it("take an http(s) URL and a whsec_ secret, and refuse a secret the Standard Webhooks rule refuses, never echoing values", () => {
    expect(loadConfig({ ...base, ALERT_WEBHOOK_URL: URL_WITH_TOKEN, ALERT_SIGNING_SECRET: SECRET }).alerts).toEqual({
      webhookUrl: URL_WITH_TOKEN,
      signingSecret: SECRET,
      format: "standard",
    });
    const ftp = problemOf({ ALERT_WEBHOOK_URL: "ftp://example.com/tok3n", ALERT_SIGNING_SECRET: SECRET });
    expect(ftp).toContain("ALERT_WEBHOOK_URL must be an http:// or https:// URL");
    expect(ftp).not.toContain("tok3n");
    const wrong = problemOf({ ALERT_SIGNING_SECRET: "not-a-whsec-secret" });
    expect(wrong).toContain("ALERT_SIGNING_SECRET is not usable: a Standard Webhooks secret starts with whsec_");
    expect(wrong).not.toContain("not-a-whsec-secret");
    expect(problemOf({ ALERT_SIGNING_SECRET: "whsec_c2hvcnQ=" })).toContain("holds 16 to 64 bytes");
    expect(problemOf({ ALERT_FORMAT: "teams" })).toContain("ALERT_FORMAT must be one of standard, slack");
    expect(problemOf({ ALERT_WEBHOOK_URL: `https://example.com/${"a".repeat(2048)}`, ALERT_SIGNING_SECRET: SECRET })).toContain(
      "ALERT_WEBHOOK_URL must be at most 2048 characters",
    );
  });

  it("need the signing secret with a URL in the standard format, not for Slack", () => {
    expect(problemOf({ ALERT_WEBHOOK_URL: URL_WITH_TOKEN })).toContain(
      "ALERT_SIGNING_SECRET is required when ALERT_WEBHOOK_URL is set and ALERT_FORMAT is standard",
    );
    expect(problemOf({ ALERT_WEBHOOK_URL: URL_WITH_TOKEN, ALERT_FORMAT: "slack" })).toBeUndefined();
  });

  it("count as secrets for the logger's scrubber: the signing secret and the URL (which may be its own credential)", () => {
    const secrets = secretsOf(loadConfig({ ...base, ALERT_WEBHOOK_URL: URL_WITH_TOKEN, ALERT_SIGNING_SECRET: SECRET }));
    expect(secrets).toContain(SECRET);
    expect(secrets).toContain(URL_WITH_TOKEN);
  });
});
