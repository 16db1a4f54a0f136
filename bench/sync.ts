import { randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { loadConfig } from "../src/config/index.js";
import { createLogger } from "../src/logging/logger.js";
import { createSandbox } from "../src/sandbox/index.js";
import { createService } from "../src/service.js";
import { sweepAll } from "../src/worker/sync/sweep-all.js";
import { waitFor } from "../test/helpers/wait-for.js";
import { BENCH_SECRET } from "./lib/pool.js";

export interface SyncRow {
  events: number;
  apiCalls: number;
  eventsPerCall: number;
  rateLimited: number;
  secondsToMirrorEqual: number;
  /** The naive design: one list call per event, at 120 calls/min. */
  naiveCalls: number;
  naiveSecondsAtLimit: number;
}

/**
 * A burst of N order events across several restaurants, delivered by the sandbox to the whole
 * service under the API's real limit (120/min): API calls spent and time until the mirror equals
 * the sandbox.
 */
export async function benchSync(opts: { redisUrl: string; events: number; restaurants: number }): Promise<SyncRow> {
  const sandbox = createSandbox({ restaurants: opts.restaurants, delivery: { retryDelaysMs: [200, 400, 800, 1600] } });
  const apiUrl = await sandbox.listen();
  const config = loadConfig({
    ROLE: "all",
    HOST: "127.0.0.1",
    PORT: "0",
    REDIS_URL: opts.redisUrl,
    QUEUE_PREFIX: `bench-s-${randomUUID().slice(0, 6)}`,
    SIGNING_SECRET: BENCH_SECRET,
    API_BASE_URL: apiUrl,
    API_KEY: sandbox.apiKey,
    RECONCILE_INTERVAL_SECONDS: "0",
    LOG_LEVEL: "warn",
  });
  const service = await createService({ config, logger: createLogger({ level: "warn" }) });
  const url = await service.start();
  try {
    await sweepAll({ api: service.worker!.api!, mirror: service.mirror });
    sandbox.addWebhook({ url: `${url}/webhooks`, secret: BENCH_SECRET });
    const before = sandbox.requestLog.length;
    const started = performance.now();
    // Each order: created, then moved 3 steps → 4 events.
    const a = sandbox.actions;
    for (let i = 0; i < opts.events / 4; i++) {
      const o = a.createOrder({ restaurantId: `rest_${(i % opts.restaurants) + 1}` });
      a.updateOrderStatus(o.id, "CONFIRMED");
      a.updateOrderStatus(o.id, "PREPARING");
      a.updateOrderStatus(o.id, "READY");
    }
    await sandbox.idle();
    const byId = (x: { id: string }, y: { id: string }) => x.id.localeCompare(y.id);
    await waitFor(async () => isDeepStrictEqual((await service.mirror.all("orders")).sort(byId), sandbox.state.orders().sort(byId)), {
      timeoutMs: 180_000,
      intervalMs: 50,
      what: `the mirror to equal the sandbox (N = ${opts.events})`,
    });
    const seconds = (performance.now() - started) / 1000;
    const log = sandbox.requestLog.slice(before);
    return {
      events: opts.events,
      apiCalls: log.length,
      eventsPerCall: opts.events / log.length,
      rateLimited: log.filter((r) => r.status === 429).length,
      secondsToMirrorEqual: seconds,
      naiveCalls: opts.events,
      naiveSecondsAtLimit: (opts.events / 120) * 60,
    };
  } finally {
    await service.stop();
    await sandbox.close();
  }
}
