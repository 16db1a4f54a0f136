import { errorMessage } from "../events/dispatch.js";
import type { RedisClient } from "../redis/redis.js";
import { pauseUnlessStopped, type StreamConsumerState } from "./stream-consumer-state.js";
import type { Entry } from "./stream-handoff.js";

/** Creates the consumer group (and the stream) unless it exists: at start, and after Redis lost its data. */
export async function ensureConsumerGroup(state: StreamConsumerState): Promise<void> {
  const { keys } = state;
  // "0": the edge may have appended before any consumer existed.
  await state.options.connection.xgroup("CREATE", keys.stream, keys.group, "0", "MKSTREAM").catch((err: unknown) => {
    if (!(err instanceof Error) || !err.message.includes("BUSYGROUP")) throw err;
  });
}

/** Keeps the entries in flight ours (a BullMQ worker's lock extension); finished ones drop out. */
export function extendClaims(state: StreamConsumerState): void {
  const ids = state.inflight.ids();
  if (ids.length === 0) return;
  const { keys } = state;
  void state.options.connection.call("XCLAIM", keys.stream, keys.group, state.consumer, "0", ...ids, "JUSTID").catch(() => undefined);
}

/** Moves entries a dead consumer (or this one, before a lost reply) left pending into the events queue. */
async function claimAbandoned(state: StreamConsumerState, reader: RedisClient): Promise<void> {
  const claim = {
    consumer: state.consumer,
    idleMs: state.options.claimIdleMs,
    count: state.claimCount,
    held: (id: string) => state.inflight.has(id),
    stopping: () => state.stopping,
  };
  const moved = await state.handoff.claimAbandoned(reader, claim);
  if (moved > 0) state.options.onClaimed?.(moved);
}

/** Reads as many new entries as there is room for (blocking up to blockMs) and begins each. */
async function readStep(state: StreamConsumerState, reader: RedisClient, begin: (entry: Entry) => void): Promise<void> {
  const { inflight, keys } = state;
  const room = Math.min(inflight.room(), state.batchSize);
  if (room === 0) {
    await inflight.whenRoom(state.blockMs);
    return;
  }
  const reply = (await reader.xreadgroup(
    "GROUP",
    keys.group,
    state.consumer,
    "COUNT",
    room,
    "BLOCK",
    state.blockMs,
    "STREAMS",
    keys.stream,
    ">",
  )) as [string, Entry[]][] | null;
  for (const entry of reply?.[0]?.[1] ?? []) begin(entry);
}

/**
 * Until the consumer stops: claims abandoned entries every half `claimIdleMs`, and reads new
 * ones whenever there is room. An error (Redis away) is retried with a growing pause; a group
 * that vanished (a flushed or replaced Redis) is made again.
 */
export async function readLoop(state: StreamConsumerState, reader: RedisClient, begin: (entry: Entry) => void): Promise<void> {
  let failures = 0;
  let nextClaimAt = 0;
  while (!state.stopping) {
    try {
      if (Date.now() >= nextClaimAt) {
        await claimAbandoned(state, reader);
        nextClaimAt = Date.now() + Math.max(100, state.options.claimIdleMs / 2);
      }
      await readStep(state, reader, begin);
      failures = 0;
    } catch (err) {
      const message = errorMessage(err);
      // A failed re-creation shows up as the next read's error, and is retried after it.
      if (message.includes("NOGROUP")) await ensureConsumerGroup(state).catch(() => undefined);
      state.logger.warn({ err: message }, "stream consumer error; retrying");
      failures++;
      await pauseUnlessStopped(state, Math.min(50 * 2 ** Math.min(failures, 5), 1000));
    }
  }
}
