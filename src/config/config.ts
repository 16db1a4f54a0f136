import type { Role } from "./schema.js";

export interface HttpLimits {
  /** Whole request (headers and body); past it Node answers 408 and closes. */
  requestTimeoutMs: number;
  /** Request headers, from the request's first byte; at most requestTimeoutMs. */
  headersTimeoutMs: number;
  /** How long an idle keep-alive socket stays open (above a load balancer's idle timeout). */
  keepAliveTimeoutMs: number;
  /** Connections beyond this are dropped on accept. */
  maxConnections: number;
  /** Request line and headers together (Node's maxHeaderSize); over it Node answers 431. */
  maxHeaderBytes: number;
  /** Body bytes buffered across all in-flight requests; beyond it the edge answers 503. */
  maxBufferedBodyBytes: number;
}

/** The service's configuration, parsed once at start (see loadConfig). */
export interface Config {
  role: Role;
  host: string;
  port: number;
  /** One Redis, or with `redisCluster` one seed node of a Redis Cluster. */
  redisUrl: string;
  /** REDIS_CLUSTER: connect as a Redis Cluster client, starting from the node `redisUrl` names. */
  redisCluster: boolean;
  /**
   * The prefix of every Redis key (BullMQ's and ours). On a cluster it always holds a hash tag
   * (`svc` is used as `{svc}`), so each queue's keys share one slot, as BullMQ's scripts need.
   */
  queuePrefix: string;
  /** Every secret accepted for X-SVC-Signature; more than one during a rotation. */
  signingSecrets: string[];
  maxBodyBytes: number;
  /** What the HTTP server tolerates from clients (slow, many, large); see docs/security.md. */
  http: HttpLimits;
  dedupWindowSeconds: number;
  /** How many finished jobs to keep, and for how long (Redis memory stays flat). */
  retention: {
    completed: { count: number; ageSeconds: number };
    failed: { count: number; ageSeconds: number };
  };
  /** How long the edge waits for Redis to acknowledge an event before answering 503. */
  enqueueTimeoutMs: number;
  /** The ingest stream between the edge and the workers (see queue/stream-sink, queue/stream-consumer). */
  ingest: {
    /** Events waiting in the stream above which the edge answers 503 (backpressure). */
    maxBacklog: number;
    /** Most events a worker reads and handles per batch. */
    batchSize: number;
    /** A dead consumer's unacknowledged entries are taken over (into the events queue) after this long. */
    claimIdleMs: number;
  };
  shutdownTimeoutMs: number;
  logLevel: string;
  /** The upstream API; without it the worker runs handlers but syncs nothing. */
  api?: {
    baseUrl: string;
    apiKey: string;
    rate: number;
    rateWindowMs: number;
    rateSafetyMs: number;
    timeoutMs: number;
    /** The most bytes one answer (a list page) may have; larger ones are refused unread. */
    maxPageBytes: number;
  };
  worker: {
    concurrency: number;
    attempts: number;
    /** First retry delay; doubles each attempt, with jitter. */
    backoffMs: number;
    /** A job whose worker died is run again once its lock (this long) expires. */
    lockMs: number;
    /** How many times a job may be found stalled (its worker died) before it fails. */
    maxStalls: number;
    /** How long one attempt's handlers may run before it counts as a retryable failure; 0: no deadline. */
    handlerTimeoutMs: number;
    /** Stream entry bytes a worker holds in flight at most (at least one entry always runs). */
    maxInflightBytes: number;
    /** How long a refresh waits so that a burst of events shares one list sweep. */
    syncDebounceMs: number;
    /** How long an id the upstream does not list yet stays pending (with backoff) before it is reported. */
    syncUnlistedGiveUpMs: number;
    /** Pages one refresh read may walk when the list order cannot stop it earlier. */
    syncRefreshMaxPages: number;
    /** Share of the rate refreshes fill before they wait for room (1: no pacing). */
    syncRefreshPaceShare: number;
    /** The longest a refresh waits for room in the budget. */
    syncRefreshPaceMaxWaitMs: number;
    /** The bookings list's upper date bound parameter (the spec does not show its name). */
    syncBookingsUpperBoundParam: string;
    /** How often a full pass starts (after the previous one started); 0 turns all reconciliation off. */
    reconcileIntervalMs: number;
    /** How often the active tier re-reads what can still change; 0 turns the active tier off. */
    reconcileActiveIntervalMs: number;
    /** Pages one full-tier slice (one job) reads at most before it saves and ends. */
    reconcileFullSlicePages: number;
    /** After a gap, a catch-up reads the final order lists back at least this far by createdAt. */
    syncCatchUpHorizonMs: number;
    /** How often a worker marks itself alive, looks for a gap, and restores lost schedulers and the stream's group. */
    syncWatchIntervalMs: number;
    /**
     * How often the change relay looks for change events left in the outbox (by other processes
     * or a crash); it is also poked right after every write that recorded changes. 0: this
     * process never relays (another worker must).
     */
    changeRelayIntervalMs: number;
  };
  /** PostgreSQL for the mirror and the event log: a server at `url`, else embedded under `dataDir`. */
  database: {
    url?: string | undefined;
    dataDir: string;
    schema: string;
    /** Operator reads (GET /events, /mirror) end after this long: a server cancels the statement, the embedded store stops its scan. */
    operatorQueryTimeoutMs: number;
  };
  /** Events older than this are pruned from the event log. */
  eventRetentionDays: number;
  /** A bulk replay matching more events than this needs `"confirm": <count>` (the dry run's count). */
  bulkReplayConfirmAbove: number;
  adminToken?: string;
  handlersModule?: string;
}
