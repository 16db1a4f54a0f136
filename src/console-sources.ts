import type { ConsoleSources } from "./http/console/console-routes.js";
import type { MirrorReader } from "./http/mirror-routes.js";
import type { RecordReader } from "./http/record-routes.js";
import type { HealthLimits } from "./http/console/health-page.js";
import type { MinuteSample } from "./metrics/minute-samples.js";
import { collectOpsSummary, type Metrics } from "./metrics/metrics.js";
import { listCausedChanges } from "./mirror/caused-changes.js";
import { eventQueryFromParams } from "./mirror/event-query.js";
import { readEventDetail } from "./mirror/event-detail.js";
import { listFailureGroups } from "./mirror/failure-groups.js";
import { readBookkeeping } from "./mirror/mirror-bookkeeping.js";
import { findRecordKinds, readRecordStory } from "./mirror/record-story.js";
import type { Storage } from "./mirror/storage.js";
import { MIRROR_KINDS, type MirrorKind } from "./mirror/store.js";
import { OperatorActionError } from "./worker/errors.js";
import type { OperatorActions } from "./worker/operator-actions.js";

export interface ConsoleSourcesOptions {
  storage: Storage;
  /** The mirror's reads as GET /mirror answers them. */
  mirror: MirrorReader;
  metrics: Metrics;
  /** The upstream budget per window (the API's rate), when the service has an API. */
  rateMax: number | undefined;
  /** The record pages and the JSON route share one reader. */
  records: RecordReader;
  /** Every worker's minute samples of the hour up to `now` (readMinuteSamples), and the limits the health rules scale with. */
  samples: (now: Date) => Promise<MinuteSample[]>;
  healthLimits: HealthLimits;
}

/** What the console reads, wired to the storage and the metrics (http imports neither). */
export function createConsoleSources(options: ConsoleSourcesOptions): ConsoleSources {
  const { storage, mirror, metrics, rateMax, records, samples, healthLimits } = options;
  const reader = storage.database.operatorDb;
  const timeoutMs = storage.database.operatorQueryTimeoutMs;
  return {
    events: {
      get: (id) => readEventDetail(storage, id),
      query: (params) => storage.eventLog.query(eventQueryFromParams(params)),
    },
    changesAfter: (event) => listCausedChanges(reader, event, timeoutMs),
    failureGroups: (range) => listFailureGroups(reader, range, timeoutMs),
    mirror: { ...mirror, bookkeeping: (kind, ids) => readBookkeeping(reader, kind as MirrorKind, ids, timeoutMs) },
    summary: () => collectOpsSummary(metrics, { kinds: MIRROR_KINDS, rateMax }),
    records: { ...records, find: (id) => findRecordKinds(reader, id, timeoutMs) },
    health: async (now) => {
      const [summary, recent] = await Promise.all([collectOpsSummary(metrics, { kinds: MIRROR_KINDS, rateMax }), samples(now)]);
      return { summary, samples: recent, limits: healthLimits };
    },
  };
}

const text = (value: unknown) => (typeof value === "string" ? value : undefined);

/**
 * A record's story (operator reads) and its refresh: the restaurant and the read's hints come from
 * the story (the mirror's copy, else the newest event naming it), the request goes through the
 * operator actions to the refresh scheduler.
 */
export function createRecordReader(storage: Storage, actions: Pick<OperatorActions, "requestRefresh">): RecordReader {
  const reader = storage.database.operatorDb;
  const timeoutMs = storage.database.operatorQueryTimeoutMs;
  const story = (kind: string, id: string, cursor?: string) => readRecordStory(reader, kind as MirrorKind, id, { cursor, timeoutMs });
  return {
    kinds: MIRROR_KINDS,
    story,
    async refresh(kind, id) {
      const found = await story(kind, id);
      if (!found?.restaurantId)
        throw new OperatorActionError(
          "record_not_found",
          `no restaurant is known for ${kind} ${id}: neither the mirror nor an event names it`,
        );
      const copy = found.record?.data;
      const note = { status: text(copy?.status), createdAt: text(copy?.createdAt), date: text(copy?.date) };
      await actions.requestRefresh(kind, found.restaurantId, id, note);
      return { kind, id, restaurantId: found.restaurantId };
    },
  };
}
