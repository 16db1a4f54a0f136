import type { Logger } from "pino";
import { EVENTS_QUEUE } from "../queue/events-queue.js";
import { BUDGET_CLASSES } from "../upstream/rate-limiter.js";
import { defineScripts, type RedisClient } from "../redis/redis.js";
import { keptFresh } from "../mirror/kinds.js";
import type { MetricJson, Metrics } from "./metrics.js";

/**
 * The last hours, one point a minute per series, shared by every process in Redis: each worker
 * process adds what its own counters counted in the minute (so the point is the sum over the
 * workers) and the shared gauges it read (the point keeps the largest). The console's health page
 * draws its charts from them in whatever process serves it.
 */

/** Ring slots (minutes) kept: the hash never holds more fields than this. */
export const SAMPLE_SLOTS = 120;
const MINUTE_MS = 60_000;

/** How a series merges the processes' contributions to one minute. */
type Merge = "sum" | "max";
type Values = MetricJson["values"];

const total = (values: Values, where: (labels: Values[number]["labels"]) => boolean = () => true) =>
  values.filter((v) => where(v.labels)).reduce((n, v) => n + v.value, 0);
const largest = (values: Values, where: (labels: Values[number]["labels"]) => boolean = () => true) =>
  values.filter((v) => where(v.labels)).reduce((n, v) => Math.max(n, v.value), 0);
/** Jobs of the events queue that ended with `outcome`. */
const events = (outcome: string) => (v: Values) => total(v, (l) => l.queue === EVENTS_QUEUE && l.outcome === outcome);

/** One row per series: its name in Redis, how it merges, and what it reads off the registry (a counter's running total, or a gauge). */
const SERIES: readonly {
  key: string;
  merge: Merge;
  metric: (m: Metrics) => { get(): Promise<{ values: Values }> };
  read: (values: Values) => number;
}[] = [
  { key: "delivered", merge: "sum", metric: (m) => m.jobs, read: events("completed") },
  { key: "retried", merge: "sum", metric: (m) => m.jobs, read: events("retried") },
  { key: "failed", merge: "sum", metric: (m) => m.jobs, read: events("failed") },
  ...BUDGET_CLASSES.map((budget) => ({
    key: `budget.${budget}`,
    merge: "sum" as const,
    metric: (m: Metrics) => m.budgetSlots,
    read: (v: Values) => total(v, (l) => l.class === budget),
  })),
  { key: "rateLimited", merge: "sum", metric: (m) => m.upstreamRateLimited, read: (v) => total(v) },
  // Calls without an answer or answered 5xx (the SvcUpstreamErrors alert's series).
  {
    key: "upstreamErrors",
    merge: "sum",
    metric: (m) => m.upstreamRequests,
    read: (v) => total(v, (l) => /^(5\d\d|timeout|network)$/.test(String(l.status))),
  },
  { key: "missed", merge: "sum", metric: (m) => m.missedWebhooks, read: (v) => total(v) },
  { key: "backlog", merge: "max", metric: (m) => m.streamBacklog, read: (v) => largest(v) },
  { key: "lagSeconds", merge: "max", metric: (m) => m.consumerLag, read: (v) => largest(v) },
  // A kind that arrives only by webhook may be quiet all day (as the SvcMirrorStale alert leaves it out).
  {
    key: "mirrorAgeSeconds",
    merge: "max",
    metric: (m) => m.mirrorLag,
    read: (v) => largest(v, (l) => keptFresh(String(l.kind))),
  },
];

/** One minute: its number (ms since the epoch / 60,000) and each series' value in it. */
export interface MinuteSample {
  minute: number;
  values: Partial<Record<string, number>>;
}

/**
 * Adds one process's contribution to a minute's point, in the ring slot `minute % slots`: a slot
 * still holding an older minute starts over; a newer one (another process's clock ahead) is kept.
 * KEYS: the samples hash. ARGV: minute, slots, the contribution as JSON `{ sum: {}, max: {} }`.
 */
const ADD_SAMPLE = `
local minute, slots = tonumber(ARGV[1]), tonumber(ARGV[2])
local slot = tostring(minute % slots)
local point = { m = minute, v = {} }
local old = redis.call("HGET", KEYS[1], slot)
if old then
  local p = cjson.decode(old)
  if p.m > minute then return 0 end
  if p.m == minute and type(p.v) == "table" then point.v = p.v end
end
local add = cjson.decode(ARGV[3])
for k, v in pairs(add.sum) do point.v[k] = (point.v[k] or 0) + v end
for k, v in pairs(add.max) do point.v[k] = math.max(point.v[k] or v, v) end
if next(point.v) == nil then point.v = nil end
redis.call("HSET", KEYS[1], slot, cjson.encode(point))
return 1
`;

interface SampleScripts {
  addMinuteSample(key: string, minute: number, slots: number, contribution: string): Promise<number>;
}
const scripts = (redis: RedisClient) => defineScripts<SampleScripts>(redis, { addMinuteSample: { numberOfKeys: 1, lua: ADD_SAMPLE } });

export interface MinuteSamplerOptions {
  redis: RedisClient;
  /** The samples hash (redisKeys(prefix).minuteSamples). */
  key: string;
  metrics: Metrics;
  logger: Logger;
  /** @defaultValue Date.now */
  now?: () => number;
}

/**
 * Samples this process's metrics once a minute into the shared ring (one script call a minute).
 * Counters go in as what they counted since the previous sample; the first sample after a start
 * holds what they counted since the process started.
 */
export function createMinuteSampler({ redis, key, metrics, logger, now = Date.now }: MinuteSamplerOptions) {
  const previous = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  async function sampleOnce(): Promise<void> {
    await metrics.render();
    const contribution: Record<Merge, Record<string, number>> = { sum: {}, max: {} };
    for (const s of SERIES) {
      const value = s.read((await s.metric(metrics).get()).values);
      if (s.merge === "max") contribution.max[s.key] = value;
      else {
        contribution.sum[s.key] = Math.max(0, value - (previous.get(s.key) ?? 0));
        previous.set(s.key, value);
      }
    }
    await scripts(redis).addMinuteSample(key, Math.floor(now() / MINUTE_MS), SAMPLE_SLOTS, JSON.stringify(contribution));
  }

  const tick = () => {
    // A tick while the previous one still waits on Redis is skipped: one write a minute at most.
    running ??= sampleOnce()
      .catch((err: unknown) => logger.warn({ err: (err as Error).message }, "minute sample not recorded"))
      .finally(() => (running = undefined));
  };

  return {
    sampleOnce,
    start() {
      timer ??= setInterval(tick, MINUTE_MS);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}

export type MinuteSampler = ReturnType<typeof createMinuteSampler>;

/** The samples of the last `minutes` minutes up to `now`, oldest first (a malformed slot is skipped). */
export async function readMinuteSamples(
  redis: RedisClient,
  key: string,
  options: { now?: number; minutes?: number } = {},
): Promise<MinuteSample[]> {
  const current = Math.floor((options.now ?? Date.now()) / MINUTE_MS);
  const first = current - (options.minutes ?? 60) + 1;
  const samples: MinuteSample[] = [];
  for (const raw of Object.values(await redis.hgetall(key))) {
    const point = parsePoint(raw);
    if (point && point.minute >= first && point.minute <= current) samples.push(point);
  }
  return samples.sort((a, b) => a.minute - b.minute);
}

function parsePoint(raw: string): MinuteSample | undefined {
  try {
    const p = JSON.parse(raw) as { m?: unknown; v?: unknown };
    if (typeof p.m !== "number") return undefined;
    const values: Record<string, number> = {};
    if (p.v && typeof p.v === "object") for (const [k, v] of Object.entries(p.v)) if (typeof v === "number") values[k] = v;
    return { minute: p.m, values };
  } catch {
    return undefined;
  }
}
