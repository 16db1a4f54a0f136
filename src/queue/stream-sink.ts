import { type RedisClient, defineScripts, redisKeys } from "../redis/redis.js";
import { BacklogFullError } from "./errors.js";
import type { EnqueueInput, EnqueueResult, EventSink } from "./event-job.js";
import { groupCommit } from "./group-commit.js";
import { encodeEntry, ENTRY_FIELD, jobIdOfEntry } from "./stream-entry.js";
import { withTimeout } from "./with-timeout.js";

export interface StreamSinkOptions {
  /** A "web" connection (createRedisConnection): fails fast while Redis is away. */
  connection: RedisClient;
  prefix: string;
  dedupWindowSeconds: number;
  /** Deadline for Redis to acknowledge one event. */
  timeoutMs: number;
  /** Above this many events in the stream, new events are refused (503). */
  maxBacklog: number;
  /** Most events appended by one script call (default 256). */
  maxBatch?: number;
  /**
   * The trace context to store with each event (the edge's span), given only when tracing is on:
   * called in the request's context as the event is handed over.
   */
  traceparent?: () => string | undefined;
}

export type StreamSink = EventSink;

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
export function createStreamSink(options: StreamSinkOptions): StreamSink {
  const keys = redisKeys(options.prefix).ingest;
  const redis = defineScripts<SinkCommands>(options.connection, { svcStreamAppend: { lua: APPEND_EVENTS } });
  const windowMs = String(options.dedupWindowSeconds * 1000);
  const maxBacklog = String(options.maxBacklog);
  const append = groupCommit(
    async (events: EnqueueInput[]) => {
      const args: string[] = [keys.stream];
      for (const e of events) args.push(keys.seen(e.id));
      args.push(windowMs, maxBacklog);
      for (const e of events)
        args.push(
          encodeEntry({ id: e.id, type: e.type, receivedAt: e.receivedAt, payload: e.payload, traceparent: e.traceparent }, e.payloadJson),
        );
      return redis.svcStreamAppend(events.length + 1, ...args);
    },
    options.maxBatch ?? 256,
    { ms: options.timeoutMs, what: "enqueue" },
  );

  const { traceparent } = options;
  return {
    async enqueue(event) {
      const answer = await append(traceparent ? { ...event, traceparent: traceparent() } : event);
      if (answer === "f") throw new BacklogFullError(options.maxBacklog);
      return { jobId: jobIdOfEntry(answer.slice(1)), duplicate: answer.startsWith("d") } satisfies EnqueueResult;
    },
    async ping() {
      await withTimeout(options.connection.ping(), options.timeoutMs, "ping");
    },
  };
}
