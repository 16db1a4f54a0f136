import type { Hono } from "hono";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { createConsoleSources, createRecordReader } from "../console-sources.js";
import { mountConsole } from "../http/console/console-routes.js";
import type { AppEnv } from "../http/request-log.js";
import type { MirrorReader } from "../http/mirror-routes.js";
import { mountOperatorRoutes } from "../http/operator-routes.js";
import type { Metrics } from "../metrics/metrics.js";
import { readMinuteSamples } from "../metrics/minute-samples.js";
import { readEventDetail } from "../mirror/storage.js";
import { eventQueryFromParams } from "../mirror/event-log.js";
import { filterFromQuery, validateRecordId } from "../mirror/mirror-store.js";
import type { Storage } from "../mirror/storage.js";
import { MIRROR_KINDS, type MirrorKind } from "../mirror/database.js";
import { withTimeout } from "../queue/deadline.js";
import { type RedisClient, redisKeys } from "../redis/redis.js";
import type { OperatorActions } from "../worker/operator-actions.js";
import type { QueueHandles } from "./queue-handles.js";

/** The operator's routes behind ADMIN_TOKEN: the API (/events, /mirror, /records, /sync, /metrics), the dashboard and the console. */
export function operatorMount(deps: {
  adminToken: string;
  config: Config;
  logger: Logger;
  metrics: Metrics;
  storage: Storage;
  queues: QueueHandles;
  actions: OperatorActions;
  /** For the console's minute samples. */
  connection: RedisClient;
}): (root: Hono<AppEnv>) => void {
  const { adminToken, config, logger, metrics, storage } = deps;
  const { eventLog } = storage;
  const samplesKey = redisKeys(config.queuePrefix).minuteSamples;
  return (root) => {
    const mirrorReader: MirrorReader = {
      kinds: MIRROR_KINDS,
      get: (k, id) => storage.operatorMirror.get(k as MirrorKind, validateRecordId(id)),
      list: (k, q) => storage.operatorMirror.list(k as MirrorKind, filterFromQuery(q)),
    };
    const records = createRecordReader(storage, deps.actions);
    mountOperatorRoutes(root, {
      adminToken,
      mirror: mirrorReader,
      events: { get: (id) => readEventDetail(storage, id), query: (q) => eventLog.query(eventQueryFromParams(q)) },
      metrics: () => metrics.render(),
      queues: [deps.queues.eventsQueue, deps.queues.syncQueue],
      actions: { port: deps.actions, logger },
      records,
    });
    const sources = createConsoleSources({
      storage,
      mirror: mirrorReader,
      metrics,
      rateMax: config.api?.rate,
      records,
      // Redis away: the charts say "no samples yet" rather than hold the page.
      samples: (now) =>
        withTimeout(readMinuteSamples(deps.connection, samplesKey, { now: now.getTime() }), 1000, "minute samples").catch(() => []),
      healthLimits: { maxBacklog: config.ingest.maxBacklog, reconcileIntervalSeconds: config.worker.reconcileIntervalMs / 1000 },
    });
    mountConsole(root, { adminToken, sources, logger });
  };
}
