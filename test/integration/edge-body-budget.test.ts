import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { openRawSocket, trickle, type RawSocket } from "../helpers/raw-socket.js";
import { sampleEvent, TEST_SECRET } from "../helpers/edge.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

// The edge's body budget under held connections (issue 55.1): senders that declare large bodies
// and send nothing, or send slowly, or fill one account's path, must not shut the edge for the
// other companies. Every sender here is a real socket to a real server; the attackers come from
// another loopback address (127.0.0.2) than the honest deliveries (127.0.0.1).

const ATTACKER = "127.0.0.2";
const MIB = 1024 * 1024;
const ACME = { id: "acme", apiKey: "svc_live_acme_key_0123456789", signingSecret: "whsec_acme_secret_0123456789" };
const BETA = { id: "beta", apiKey: "svc_live_beta_key_0123456789", signingSecret: "whsec_beta_secret_0123456789" };

let svc: TestService | undefined;
const sockets: RawSocket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.socket.destroy();
  await svc?.stop();
  svc = undefined;
});

async function startWithAccounts(env: Record<string, string>): Promise<TestService> {
  const service = await startService({ ROLE: "web", SECRETS_KEY: randomBytes(32).toString("base64"), ...env });
  for (const account of [ACME, BETA]) {
    const res = await fetch(`${service.url}/accounts`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(account),
    });
    expect(res.status).toBe(201);
  }
  return service;
}

/**
 * A delivery to `path` with a well-formed (wrong) signature declaring `length` bytes, from the
 * attacker's address. Resolves once the server took the request to its handler: Node writes
 * `100 Continue` for `Expect: 100-continue` just before it runs the request's handler, which
 * checks the header and starts reading the body in that same turn.
 */
async function heldDelivery(url: string, path: string, length: number): Promise<RawSocket> {
  const raw = await openRawSocket(url, { localAddress: ATTACKER });
  sockets.push(raw);
  raw.socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-SVC-Signature: sha256=${"0".repeat(64)}\r\n` +
      `Expect: 100-continue\r\nContent-Length: ${length}\r\n\r\n`,
  );
  await raw.until("HTTP/1.1 100 Continue");
  return raw;
}

async function honestDeliveries(url: string): Promise<number[]> {
  const send = (path: string, secret: string) => {
    const text = JSON.stringify(sampleEvent());
    return fetch(`${url}${path}`, {
      method: "POST",
      body: text,
      headers: { "content-type": "application/json", "x-svc-signature": signPayload(text, secret) },
    }).then(async (res) => (await res.arrayBuffer(), res.status));
  };
  const statuses: number[] = [];
  for (let i = 0; i < 20; i++)
    statuses.push(...(await Promise.all([send("/webhooks/acme", ACME.signingSecret), send("/webhooks", TEST_SECRET)])));
  return statuses;
}

describe("the edge's body budget under held connections", () => {
  it(
    "keeps answering other companies while 33 senders declare 1 MiB and send nothing and others fill one account's path",
    { timeout: 60_000 },
    async () => {
      // The default body sizes (1 MiB a body, 32 MiB in all); timeouts long enough that nothing is
      // cut while the test runs, so only the budget stands between the attackers and the others.
      svc = await startWithAccounts({ HTTP_REQUEST_TIMEOUT_MS: "120000", HTTP_BODY_TIMEOUT_MS: "120000" });
      // 33 × 1 MiB declared is more than the whole budget; not a byte of it is sent.
      for (let i = 0; i < 33; i++) await heldDelivery(svc.url, "/webhooks/beta", MIB);
      // Ten more send all of their body but its last byte: beta's path may hold a quarter of the
      // budget (8 MiB), so eight are held and the other two are refused.
      const loris: RawSocket[] = [];
      for (let i = 0; i < 10; i++) {
        const raw = await heldDelivery(svc.url, "/webhooks/beta", MIB);
        raw.socket.write(Buffer.alloc(MIB - 1, 0x20));
        loris.push(raw);
      }
      const refused = () => loris.filter((s) => s.received().includes("HTTP/1.1 503"));
      await waitFor(() => refused().length >= 2, { what: "beta's share full: its slow bodies past it refused" });

      // Meanwhile every correctly signed delivery to another account's path and to /webhooks is accepted.
      const statuses = await honestDeliveries(svc.url);
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      expect(statuses).toHaveLength(40);
      // Eight slow bodies are held (beta's share), two refused with server_busy.
      expect(refused()).toHaveLength(2);
      expect(refused().filter((s) => s.received().includes("server_busy"))).toHaveLength(2);
      // The 33 body-less and the 8 held slow bodies are all still open, waiting for their bodies.
      const held = sockets.filter((s) => !refused().includes(s));
      expect(held).toHaveLength(41);
      expect(held.filter((s) => s.socket.destroyed || s.received().includes("HTTP/1.1 4"))).toEqual([]);
    },
  );

  it(
    "cuts a body that trickles in at the body deadline, long before the request timeout, and serves the others meanwhile",
    { timeout: 40_000 },
    async () => {
      svc = await startWithAccounts({ HTTP_REQUEST_TIMEOUT_MS: "60000", HTTP_BODY_TIMEOUT_MS: "500" });
      const slow: RawSocket[] = [];
      for (let i = 0; i < 5; i++) {
        const raw = await heldDelivery(svc.url, "/webhooks/beta", 4000);
        trickle(raw.socket, "x".repeat(4000), 20);
        slow.push(raw);
      }
      const statuses = await honestDeliveries(svc.url);
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      for (const raw of slow) {
        const received = await raw.closed;
        expect(received).toMatch(/HTTP\/1.1 408/);
        expect(received).toContain("body_timeout");
      }
    },
  );
});
