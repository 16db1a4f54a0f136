import { groupCommit } from "../base/group-commit.js";
import { type RedisClient, defineScripts, redisKeys } from "../redis/redis.js";
import { withTimeout } from "../base/deadline.js";
import { BacklogFullError, EntryDecodeError, QueueUnavailableError } from "./errors.js";
import { entryJobIdentity, type JobIdentity } from "./job-ids.js";

// The ingest stream: what the edge hands over for one event, the stream entry it is stored as, the
// sink that appends them (in batches: base/group-commit.ts), and how far the workers are
// behind.

/** An event as the edge accepted it: the stream entry, and the data every job carrying it starts from. */
export interface IngestedEvent {
  /** The event id (envelope `id`, else SHA-256 of the raw body): also the deduplication id. */
  id: string;
  type: string;
  /** ISO 8601 time the edge accepted the event. */
  receivedAt: string;
  /** The whole verified body as parsed, unknown fields included. */
  payload: Record<string, unknown>;
  /** The registered account (company) it was delivered for (POST /webhooks/{account}); absent for `default`. */
  account?: string;
  /**
   * The registration of `account` it was delivered under (AccountKeys.incarnation): once the account
   * is removed, or added again, the event no longer belongs to it and is dropped (belongsToAccount).
   */
  incarnation?: string;
  /**
   * The W3C trace context of the delivery (its edge span), present only when tracing is on: the
   * handlers of every attempt, retry and replay of the event join the delivery's trace.
   */
  traceparent?: string;
}

export interface EnqueueResult {
  /** The BullMQ job holding this event (the earlier one's, for a duplicate). */
  jobId: string;
  /** True when the event id was already seen within the deduplication window. */
  duplicate: boolean;
}

/** An event as the edge hands it over: with the verified body's text, which a sink may store as is. */
export interface EnqueueInput extends IngestedEvent {
  payloadJson?: string;
}

/** Where the edge hands verified events: the ingest stream in production, anything in tests and benches. */
export interface EventSink {
  enqueue(event: EnqueueInput): Promise<EnqueueResult>;
  /** Resolves when the sink can accept events (Redis answers); rejects otherwise. */
  ping(): Promise<void>;
}

/** The one stream field an event is stored in. */
export const ENTRY_FIELD = "e";

/**
 * The stream entry of an event: the IngestedEvent as JSON. `payloadJson`, when the caller has it
 * (the verified body's text, already known to be a JSON object), is spliced in as is, which spares
 * re-serializing the whole payload on the hot path.
 */
export function encodeEntry(event: IngestedEvent, payloadJson?: string): string {
  if (payloadJson === undefined) return JSON.stringify(event);
  // The trace context only when tracing is on (see IngestedEvent.traceparent): no bytes otherwise.
  const trace = event.traceparent === undefined ? "" : `,"traceparent":${JSON.stringify(event.traceparent)}`;
  const account = event.account === undefined ? "" : `,"account":${JSON.stringify(event.account)}`;
  const incarnation = event.incarnation === undefined ? "" : `,"incarnation":${JSON.stringify(event.incarnation)}`;
  return `{"id":${JSON.stringify(event.id)},"type":${JSON.stringify(event.type)},"receivedAt":${JSON.stringify(event.receivedAt)}${trace}${account}${incarnation},"payload":${payloadJson}}`;
}

/** Reads back what encodeEntry wrote; throws EntryDecodeError on anything else. */
export function decodeEntry(text: string): IngestedEvent {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new EntryDecodeError("entry is not JSON");
  }
  const e = value as Partial<IngestedEvent> | null;
  // A value that is no object has no such fields either.
  const texts = [e?.id, e?.type, e?.receivedAt];
  if (!texts.every((t) => typeof t === "string") || !e?.payload || typeof e.payload !== "object")
    throw new EntryDecodeError("entry lacks id, type, receivedAt or payload");
  return e as IngestedEvent;
}

/** What a consumer hands BullMQ for one entry (one element of an addBulk). */
export interface EntryJob {
  name: string;
  data: IngestedEvent;
  opts: JobIdentity;
}

/**
 * The job of a stream entry. Moving one entry twice (a consumer died before acknowledging it) adds
 * nothing the second time: the job id is the entry's, and BullMQ's throttle deduplication on the
 * entry keeps its key for `dedupTtlMs` even after the job was completed and removed.
 */
export function jobOfEntry(entryId: string, text: string, dedupTtlMs: number): EntryJob {
  return jobOfEvent(entryId, decodeEntry(text), dedupTtlMs);
}

/** The job of an entry whose event was already decoded. */
export function jobOfEvent(entryId: string, data: IngestedEvent, dedupTtlMs: number): EntryJob {
  return { name: data.type, data, opts: entryJobIdentity(entryId, dedupTtlMs) };
}

/** What the edge's sinks (the ingest stream, the producer straight into the events queue) are built from. */
export interface EdgeSinkOptions {
  /** A "web" connection (createRedisConnection): fails fast while Redis is away. */
  connection: RedisClient;
  prefix: string;
  dedupWindowSeconds: number;
  /** Deadline for Redis to acknowledge one event. */
  timeoutMs: number;
  /** Most events written in one round trip (default 256). */
  maxBatch?: number;
}

export interface StreamSinkOptions extends EdgeSinkOptions {
  /** Above this many events in the stream, new events are refused (503). */
  maxBacklog: number;
  /**
   * The trace context to store with each event (the edge's span), given only when tracing is on:
   * called in the request's context as the event is handed over.
   */
  traceparent?: () => string | undefined;
}

// KEYS[1] the stream, KEYS[2..] the seen key of each event; ARGV[1] window ms, ARGV[2] max
// backlog, ARGV[3..] each event's entry. Per event: "d<entry id>" seen within the window (the first
// copy's entry), "f" refused (backlog full), "n<entry id>" appended. XLEN is O(1); a duplicate is
// answered even when the backlog is full, since it adds nothing.
const APPEND_EVENTS = `
local room = tonumber(ARGV[2]) - redis.call('XLEN', KEYS[1])
local out = {}
for i = 2, #KEYS do
  local seen = redis.call('GET', KEYS[i])
  if seen then
    out[i - 1] = 'd' .. seen
  elseif room <= 0 then
    out[i - 1] = 'f'
  else
    local id = redis.call('XADD', KEYS[1], '*', '${ENTRY_FIELD}', ARGV[i + 1])
    redis.call('SET', KEYS[i], id, 'PX', ARGV[1])
    room = room - 1
    out[i - 1] = 'n' .. id
  end
end
return out`;

interface SinkCommands {
  svcStreamAppend(numKeys: number, ...args: string[]): Promise<string[]>;
}

/**
 * The edge's hot path: appends each verified event to the ingest stream and marks its id seen
 * for the deduplication window, atomically, in one small script per group-committed batch. The
 * caller answers 200 only once this resolves (Redis acknowledged); the workers' stream consumers handle events
 * into BullMQ later. An event is marked seen in the same script that stores it, never before.
 */
export function createStreamSink(options: StreamSinkOptions): EventSink {
  const keys = redisKeys(options.prefix).ingest;
  const redis = defineScripts<SinkCommands>(options.connection, { svcStreamAppend: { lua: APPEND_EVENTS } });
  const windowMs = String(options.dedupWindowSeconds * 1000);
  const maxBacklog = String(options.maxBacklog);
  const append = groupCommit(
    async (events: EnqueueInput[]) => {
      const seen = events.map((e) => keys.seen(e.id, e.account, e.incarnation));
      const entries = events.map(({ id, type, receivedAt, payload, traceparent, account, incarnation, payloadJson }) =>
        encodeEntry({ id, type, receivedAt, payload, traceparent, account, incarnation }, payloadJson),
      );
      return redis.svcStreamAppend(events.length + 1, keys.stream, ...seen, windowMs, maxBacklog, ...entries);
    },
    options.maxBatch ?? 256,
    { ms: options.timeoutMs, what: "enqueue", Unavailable: QueueUnavailableError },
  );

  const { traceparent } = options;
  return {
    async enqueue(event) {
      const answer = await append(traceparent ? { ...event, traceparent: traceparent() } : event);
      if (answer === "f") throw new BacklogFullError(options.maxBacklog);
      return { jobId: answer.slice(1), duplicate: answer.startsWith("d") } satisfies EnqueueResult;
    },
    async ping() {
      await withTimeout(options.connection.ping(), options.timeoutMs, "ping", QueueUnavailableError);
    },
  };
}

export interface StreamBacklog {
  /** Events in the ingest stream: accepted and not yet finished by a worker (unread, or read and unacknowledged). */
  length: number;
  /** Age of the oldest of them, from its entry id's time (0 when there is none): the consumers' lag. */
  oldestAgeMs: number;
}

/**
 * How far the workers are behind the edge. A consumer deletes what it acknowledged, so the stream
 * holds exactly the events not yet finished, and its first entry is the oldest. Two O(1)-ish reads.
 */
export async function readStreamBacklog(redis: RedisClient, prefix: string, now = Date.now()): Promise<StreamBacklog> {
  const { stream } = redisKeys(prefix).ingest;
  const [length, first] = await Promise.all([redis.xlen(stream), redis.xrange(stream, "-", "+", "COUNT", 1)]);
  const id = first[0]?.[0];
  return { length, oldestAgeMs: id === undefined ? 0 : Math.max(0, now - Number(id.split("-")[0])) };
}
