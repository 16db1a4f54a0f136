import type { Role } from "./schema.js";

/** The service's configuration, parsed once at start (see loadConfig). */
export interface Config {
  role: Role;
  host: string;
  port: number;
  redisUrl: string;
  /** BullMQ key prefix; wrap it in braces (`{svc}`) for Redis Cluster. */
  queuePrefix: string;
  /** Every secret accepted for X-SVC-Signature; more than one during a rotation. */
  signingSecrets: string[];
  maxBodyBytes: number;
  dedupWindowSeconds: number;
  /** How many finished jobs to keep, and for how long (Redis memory stays flat). */
  retention: {
    completed: { count: number; ageSeconds: number };
    failed: { count: number; ageSeconds: number };
  };
  /** How long the edge waits for Redis to acknowledge an event before answering 503. */
  enqueueTimeoutMs: number;
  /** The ingest stream between the edge and BullMQ (see queue/stream-sink, queue/stream-pump). */
  ingest: {
    /** Events waiting in the stream above which the edge answers 503 (backpressure). */
    maxBacklog: number;
    /** Most events the pump moves into BullMQ per addBulk. */
    pumpBatchSize: number;
    /** A dead pump's unacknowledged entries are taken over after this long. */
    pumpClaimIdleMs: number;
  };
  shutdownTimeoutMs: number;
  logLevel: string;
  /** The upstream API; without it the worker runs handlers but syncs nothing. */
  api?: { baseUrl: string; apiKey: string; rate: number; rateWindowMs: number; rateSafetyMs: number; timeoutMs: number };
  worker: {
    concurrency: number;
    attempts: number;
    /** First retry delay; doubles each attempt, with jitter. */
    backoffMs: number;
    /** A job whose worker died is run again once its lock (this long) expires. */
    lockMs: number;
    /** How many times a job may be found stalled (its worker died) before it fails. */
    maxStalls: number;
    /** How long a refresh waits so that a burst of events shares one list sweep. */
    syncDebounceMs: number;
    /** 0 turns the scheduled reconciliation off. */
    reconcileIntervalMs: number;
  };
  adminToken?: string;
  handlersModule?: string;
}
