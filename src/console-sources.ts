import type { ConsoleSources } from "./http/console/console-sources.js";
import type { MirrorReader } from "./http/mirror-routes.js";
import type { HealthLimits } from "./http/console/health-figures.js";
import type { MinuteSample } from "./metrics/minute-samples.js";
import { collectOpsSummary } from "./metrics/ops-summary.js";
import type { Metrics } from "./metrics/metrics.js";
import { listCausedChanges } from "./mirror/caused-changes.js";
import { eventQueryFromParams } from "./mirror/event-query.js";
import { listFailureGroups } from "./mirror/failure-groups.js";
import { readBookkeeping } from "./mirror/mirror-bookkeeping.js";
import type { Storage } from "./mirror/storage.js";
import { MIRROR_KINDS, type MirrorKind } from "./mirror/store.js";

export interface ConsoleSourcesOptions {
  storage: Storage;
  /** The mirror's reads as GET /mirror answers them. */
  mirror: MirrorReader;
  metrics: Metrics;
  /** The upstream budget per window (the API's rate), when the service has an API. */
  rateMax: number | undefined;
  /** Every worker's minute samples of the hour up to `now` (readMinuteSamples), and the limits the health rules scale with. */
  samples: (now: Date) => Promise<MinuteSample[]>;
  healthLimits: HealthLimits;
}

/** What the console reads, wired to the storage and the metrics (http imports neither). */
export function createConsoleSources({ storage, mirror, metrics, rateMax, samples, healthLimits }: ConsoleSourcesOptions): ConsoleSources {
  const reader = storage.database.operatorDb;
  const timeoutMs = storage.database.operatorQueryTimeoutMs;
  return {
    events: {
      async get(id) {
        const event = await storage.eventLog.get(id);
        return event && { ...event, steps: await storage.steps.forEvent(id) };
      },
      query: (params) => storage.eventLog.query(eventQueryFromParams(params)),
    },
    changesAfter: (event) => listCausedChanges(reader, event, timeoutMs),
    failureGroups: (range) => listFailureGroups(reader, range, timeoutMs),
    mirror: { ...mirror, bookkeeping: (kind, ids) => readBookkeeping(reader, kind as MirrorKind, ids, timeoutMs) },
    summary: () => collectOpsSummary(metrics, { kinds: MIRROR_KINDS, rateMax }),
    health: async (now) => {
      const [summary, recent] = await Promise.all([collectOpsSummary(metrics, { kinds: MIRROR_KINDS, rateMax }), samples(now)]);
      return { summary, samples: recent, limits: healthLimits };
    },
  };
}
