import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { SignatureScheme } from "../config/config.js";
import { signDelivery } from "../events/signature-schemes.js";

export interface WebhookEndpoint {
  url: string;
  secret: string;
  /** How deliveries are signed: `svc` (X-SVC-Signature, the upstream's; the default) or `standard-webhooks` (a whsec_ secret). */
  scheme?: SignatureScheme;
  /** Send only `{ id, restaurantId }` as data. */
  thin?: boolean;
}

export interface DeliveryRecord {
  eventId: string;
  type: string;
  url: string;
  attempt: number;
  status: number | null;
  error?: string;
  at: number;
}

/** A new event id as the upstream gives one: `evt_` and 32 hex digits (the sandbox's deliveries, `trigger`'s samples). */
export const newEventId = () => `evt_${randomUUID().replace(/-/g, "")}`;

const DEFAULT_RETRY_DELAYS_MS = [1000, 2000, 4000, 8000, 16_000, 32_000, 64_000];

/**
 * Signs and POSTs each event to every endpoint, retrying a non-2xx answer or a timeout after
 * each of `retryDelaysMs` (docs/upstream.md). Deliveries run concurrently; the same event keeps
 * its id on every attempt.
 */
export function createWebhookSender(
  { timeoutMs = 10_000, retryDelaysMs = DEFAULT_RETRY_DELAYS_MS }: { timeoutMs?: number; retryDelaysMs?: readonly number[] } = {},
  logger?: Logger,
) {
  const endpoints: WebhookEndpoint[] = [];
  const deliveries: DeliveryRecord[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const controllers = new Set<AbortController>();
  let pending = 0;
  const idleWaiters: (() => void)[] = [];
  let closed = false;

  const wakeIdleWaiters = () => {
    for (const wake of idleWaiters.splice(0)) wake();
  };
  const settle = () => {
    if (pending > 0 && --pending === 0) wakeIdleWaiters();
  };

  async function attempt(endpoint: WebhookEndpoint, eventId: string, type: string, body: string, n: number): Promise<void> {
    // Once closed, a delivery ends where it is: close() settled them all (pending is 0 from then on).
    if (closed) return;
    const controller = new AbortController();
    controllers.add(controller);
    const timeout = setTimeout(() => controller.abort(), timeoutMs);
    let status: number | null = null;
    let error: string | undefined;
    try {
      const res = await fetch(endpoint.url, {
        method: "POST",
        body,
        headers: {
          "content-type": "application/json",
          ...signDelivery(endpoint.scheme ?? "svc", endpoint.secret, eventId, body),
          "user-agent": "svc-sandbox-webhooks",
        },
        signal: controller.signal,
      });
      status = res.status;
      // Read only to free the connection: the status is the answer, a broken body changes nothing.
      await res.arrayBuffer().catch(() => undefined);
    } catch (err) {
      error = controller.signal.aborted ? "timeout" : (err as Error).message;
    } finally {
      clearTimeout(timeout);
      controllers.delete(controller);
    }
    deliveries.push({ eventId, type, url: endpoint.url, attempt: n, status, error, at: Date.now() });
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- close() may have run during the await above; TS keeps the narrowing of the check at the top
    if (closed) return;
    const ok = status !== null && status >= 200 && status < 300;
    const delay = retryDelaysMs[n - 1];
    if (ok || delay === undefined) {
      if (!ok) logger?.warn({ eventId, url: endpoint.url, attempts: n }, "webhook dropped after the last retry");
      settle();
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      void attempt(endpoint, eventId, type, body, n + 1);
    }, delay);
    timers.add(timer);
  }

  return {
    deliveries,
    // Arrow properties, not methods: the sandbox hands them out unbound.
    add: (endpoint: WebhookEndpoint) => {
      endpoints.push(endpoint);
    },
    removeAll: () => {
      endpoints.length = 0;
    },
    send(type: string, resource: { id: string; restaurantId: string }) {
      if (closed || endpoints.length === 0) return;
      const envelope = { id: newEventId(), type, createdAt: new Date().toISOString() };
      const full = JSON.stringify({ ...envelope, data: structuredClone(resource) });
      const thin = JSON.stringify({ ...envelope, data: { id: resource.id, restaurantId: resource.restaurantId } });
      for (const endpoint of endpoints) {
        pending++;
        void attempt(endpoint, envelope.id, type, endpoint.thin ? thin : full, 1);
      }
    },
    idle: (): Promise<void> => (pending === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve))),
    close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const c of controllers) c.abort();
      pending = 0;
      wakeIdleWaiters();
    },
  };
}
