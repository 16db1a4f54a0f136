import type { RedisClient } from "../redis/redis.js";
import { BULK_REPLAY_TTL_SECONDS, type bulkReplayProgress } from "./bulk-replay-progress.js";
import { OperatorActionError } from "./operator-action-error.js";

type Progress = ReturnType<typeof bulkReplayProgress>;

// Takes the filter's slot when it is still what the caller saw (ARGV[2], "" for empty); else answers who holds it.
const TAKE_SLOT = `local held = redis.call("get", KEYS[1]) or ""
if held ~= ARGV[2] then return held end
redis.call("set", KEYS[1], ARGV[1], "EX", ARGV[3]) return false`;

/**
 * Refuses a bulk replay whose count is not the one the caller confirmed, or that is above
 * `confirmAbove` (BULK_REPLAY_CONFIRM_ABOVE) with no confirmation: 409 confirm_required.
 */
export function refuseUnconfirmed(count: number, confirm: number | undefined, confirmAbove: number): void {
  if (confirm !== undefined && confirm !== count)
    throw new OperatorActionError(
      "confirm_required",
      `the filter matches ${count} events now, not ${confirm}; count again (dryRun) and send "confirm": ${count}`,
    );
  if (confirm === undefined && count > confirmAbove)
    throw new OperatorActionError(
      "confirm_required",
      `the filter matches ${count} events, more than BULK_REPLAY_CONFIRM_ABOVE (${confirmAbove}); send "confirm": ${count} to replay them`,
    );
}

/** Holds the filter's slot for `id`, or refuses naming the replay of that filter still running (409 replay_running). */
export async function takeFilterSlot(redis: RedisClient, progress: Progress, slot: string, id: string): Promise<void> {
  let seen = "";
  for (;;) {
    const held = (await redis.eval(TAKE_SLOT, 1, slot, id, seen, BULK_REPLAY_TTL_SECONDS)) as string | null;
    if (held === null) return;
    if ((await progress.read(held))?.state === "running")
      throw new OperatorActionError(
        "replay_running",
        `bulk replay ${held} of this filter is still running (GET /events/replays/${held}; stop it: DELETE /events/replays/${held})`,
      );
    seen = held;
  }
}

/** An Idempotency-Key seen before: its replay, or a refusal when it came with other parameters (422). */
export async function earlierAnswer(
  redis: RedisClient,
  progress: Progress,
  key: string,
  params: string,
): Promise<{ count: number; id: string } | undefined> {
  const stored = await redis.get(key);
  if (stored === null) return undefined;
  const [storedParams, id = ""] = stored.split(" ");
  if (storedParams !== params)
    throw new OperatorActionError(
      "idempotency_key_reused",
      "this Idempotency-Key was used with other parameters (filter, fresh); send a new key for a new request",
    );
  return { count: (await progress.read(id))?.total ?? 0, id };
}
