import { createSandbox, type Sandbox, type SandboxOptions } from "../../src/sandbox/index.js";
import { EVENTS_QUEUE, SYNC_QUEUE } from "../../src/queue/events-queue.js";
import { redisKeys } from "../../src/redis/redis.js";
import { waitFor } from "./wait-for.js";
import type { EventHandlers } from "../../src/worker/handlers.js";
import { TEST_SECRET } from "./edge.js";
import { startService, type TestService } from "./service.js";
import { waitForQueuesIdle } from "./queues-idle.js";
import { createChangeOutbox } from "../../src/mirror/change-outbox.js";

export interface Stack {
  sandbox: Sandbox;
  svc: TestService;
  /** Resolves once the sandbox delivered everything and both queues are empty. */
  drained(): Promise<void>;
  /**
   * Everything delivered and handled, change events too: drained, then the change outbox empty,
   * then drained again (a change relayed between the first two looks is handled before the last one passes).
   */
  settled(): Promise<void>;
  /** Records of a kind in the mirror vs. in the sandbox (the truth), sorted by id. */
  compare(kind: "orders" | "bookings" | "menu-items"): Promise<{ mirror: unknown[]; truth: unknown[] }>;
  apiCalls(): number;
  stop(): Promise<void>;
}

/** The sandbox (upstream) delivering its own webhooks to a whole service (edge + worker). */
export async function startStack(
  opts: {
    thin?: boolean;
    deliver?: boolean;
    sandbox?: SandboxOptions;
    env?: Record<string, string>;
    handlers?: EventHandlers[];
    /**
     * Requests a minute both the sandbox allows and the service spends (API_RATE), for a test
     * whose subject is not the rate budget: the default 120 paces a sweep over seconds.
     */
    apiRate?: number;
  } = {},
): Promise<Stack> {
  const rate = opts.apiRate === undefined ? undefined : { max: opts.apiRate, windowMs: 60_000 };
  const sandbox = createSandbox({ delivery: { retryDelaysMs: [50, 100, 200] }, ...(rate && { rateLimit: rate }), ...opts.sandbox });
  const apiUrl = await sandbox.listen();
  const env = { API_BASE_URL: apiUrl, API_KEY: sandbox.apiKey, ...(rate && { API_RATE: String(rate.max) }), ...opts.env };
  const svc = await startService(env, opts.handlers);
  if (opts.deliver !== false) sandbox.addWebhook({ url: `${svc.url}/webhooks`, secret: TEST_SECRET, thin: opts.thin ?? false });
  const queues = [svc.service.eventsQueue, svc.service.worker!.syncQueue];
  const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
  const drained = async () => {
    await sandbox.idle();
    await waitFor(async () => (await svc.redis.xlen(redisKeys(svc.prefix).ingest.stream)) === 0, {
      timeoutMs: 60_000,
      what: "the ingest stream to drain",
    });
    await waitForQueuesIdle(queues, { timeoutMs: 60_000, what: `${EVENTS_QUEUE} and ${SYNC_QUEUE} queues to drain` });
  };
  return {
    sandbox,
    svc,
    drained,
    async settled() {
      const outbox = createChangeOutbox(svc.database.db);
      await drained();
      await waitFor(async () => (await outbox.pending()) === 0, { what: "the change outbox to empty" });
      await drained();
    },
    async compare(kind) {
      const truth = (
        kind === "orders" ? sandbox.state.orders() : kind === "bookings" ? sandbox.state.bookings() : sandbox.state.menuItems()
      ) as { id: string }[];
      const mirror = (await svc.service.mirror.all(kind)) as { id: string }[];
      return { mirror: [...mirror].sort(byId), truth: [...truth].sort(byId) };
    },
    apiCalls: () => sandbox.requestLog.length,
    async stop() {
      await svc.stop();
      await sandbox.close();
    },
  };
}
