import { afterAll, describe, expect, inject, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";

const SECRET = "whsec_chaos_secrets_6a2f";
const ADMIN = "chaos-admin-token-secrets-5d1c";
const API_KEY = "svc_live_chaos_key_do_not_log_99";
let proc: CliProcess | undefined;
afterAll(() => {
  if (proc?.child.exitCode === null) proc.child.kill("SIGKILL");
});

describe("secrets and access", () => {
  it("refuses operator routes without the token and prints no secret in a whole run", async () => {
    proc = runCli(["serve"], {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: "chaos-secrets",
      PORT: "0",
      SIGNING_SECRET: `${SECRET},whsec_second_secret_77`,
      ADMIN_TOKEN: ADMIN,
      // An API that refuses connections: the worker logs errors that carry request details.
      API_BASE_URL: "http://127.0.0.1:9",
      API_KEY,
      RECONCILE_INTERVAL_SECONDS: "1",
      API_TIMEOUT_MS: "200",
      LOG_LEVEL: "debug",
    });
    const url = await proc.listening();
    for (const path of ["/metrics", "/mirror/orders/x", "/admin/queues", "/admin/queues/api/queues"]) {
      for (const auth of [
        undefined,
        "Bearer wrong",
        `Bearer ${ADMIN.slice(0, -1)}`,
        `Basic ${Buffer.from(`x:${ADMIN}x`).toString("base64")}`,
      ]) {
        const res = await fetch(`${url}${path}`, auth ? { headers: { authorization: auth } } : {});
        expect(res.status, `${path} with ${auth}`).toBe(401);
      }
      expect((await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } })).status).not.toBe(401);
    }
    // Deliveries with the secrets in every header a client might misuse.
    const body = JSON.stringify({ id: "evt_secret", type: "order.created", data: { id: "o", restaurantId: "r" } });
    await fetch(`${url}/webhooks`, {
      method: "POST",
      body,
      headers: {
        "content-type": "application/json",
        "x-svc-signature": signPayload(body, SECRET),
        authorization: `Bearer ${API_KEY}`,
        "x-admin": ADMIN,
      },
    });
    await fetch(`${url}/webhooks`, {
      method: "POST",
      body: `{"type":"x","leak":"${SECRET}"}`,
      headers: { "content-type": "application/json", "x-svc-signature": `sha256=${SECRET}` },
    });
    // One reconciliation attempt against the refusing API, whose error is logged.
    await proc.waitForLog("job failed, will retry");
    proc.child.kill("SIGTERM");
    expect((await proc.exited).code).toBe(0);
    const output = proc.stdout() + proc.stderr();
    expect(output).toContain('"msg":"request"');
    for (const secret of [SECRET, "whsec_second_secret_77", ADMIN, API_KEY]) expect(output).not.toContain(secret);
  });
});
