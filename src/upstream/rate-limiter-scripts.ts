// The rate limiter's decisions (rate-limiter.ts). Each is one Lua script, so it is atomic across
// every process sharing the key, and reads Redis's clock (TIME) so processes on hosts with
// different clocks still agree.

/**
 * Take one slot, or say how long to wait.
 * KEYS: log (sorted set of every class's slot times), pause, next (when the next paced slot is
 *       due), active log, full log (each lower class's own slots, for `state`), webhook waiters,
 *       active waiters (sorted sets of callers refused, scored by when they stop counting).
 * ARGV: max, window (ms, safety margin included), interval (ms between paced slots), burst (slots
 *       a class may take ahead of the pace: the webhook class a few, the others 1), class, member
 *       (one per acquire call: its slot and its waiter entry), grace (ms a waiter still counts
 *       after its wait, for its way back to Redis).
 * Returns { 1, now } when the slot was taken, { 0, waitMs } otherwise.
 */
export const ACQUIRE = `
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max, window, interval, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local class, member, grace = ARGV[5], ARGV[6], tonumber(ARGV[7])
local waiters = { webhook = KEYS[6], active = KEYS[7] }
local nextAt = tonumber(redis.call("GET", KEYS[3]) or "0")
-- A refused caller of a class with classes below it says it waits, so that those leave it the slot.
local function refuse(wait)
  wait = math.max(1, wait)
  local own = waiters[class]
  if own then
    -- Entries past their time (a caller gone) leave here too, so the set stays as small as the
    -- number of callers waiting now.
    redis.call("ZREMRANGEBYSCORE", own, "-inf", now)
    redis.call("ZADD", own, now + wait + grace, member)
    local last = redis.call("ZRANGE", own, -1, -1, "WITHSCORES")
    redis.call("PEXPIREAT", own, tonumber(last[2]))
  end
  return { 0, wait }
end
local paused = redis.call("PTTL", KEYS[2])
if paused > 0 then return refuse(paused) end
-- Strict priority: a lower class does not take a slot while a higher class waits for one.
local above = {}
if class == "active" then above = { KEYS[6] } elseif class == "full" then above = { KEYS[6], KEYS[7] } end
for _, key in ipairs(above) do
  redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
  if redis.call("ZCARD", key) > 0 then return refuse(math.max(interval, nextAt - now)) end
end
-- The hard ceiling: never more than max in the window, so the API never answers 429.
for _, log in ipairs({ KEYS[1], KEYS[4], KEYS[5] }) do redis.call("ZREMRANGEBYSCORE", log, "-inf", now - window) end
local count = redis.call("ZCARD", KEYS[1])
if count >= max then
  local oldest = redis.call("ZRANGE", KEYS[1], count - max, count - max, "WITHSCORES")
  return refuse(tonumber(oldest[2]) + window - now)
end
-- Pacing: one slot per interval, a class with a burst up to burst - 1 slots ahead of it.
local due = nextAt - (burst - 1) * interval
if now < due then return refuse(due - now) end
-- A caller late by up to a quarter interval (timers, network) keeps its place in the pace, so a
-- busy budget is not lost to lateness; an idle one starts the pace afresh.
redis.call("SET", KEYS[3], math.max(nextAt, now - math.floor(interval / 4)) + interval, "PX", window)
redis.call("ZADD", KEYS[1], now, member)
redis.call("PEXPIRE", KEYS[1], window)
local own = nil
if class == "active" then own = KEYS[4] elseif class == "full" then own = KEYS[5] end
if own then
  redis.call("ZADD", own, now, member)
  redis.call("PEXPIRE", own, window)
end
if waiters[class] then redis.call("ZREM", waiters[class], member) end
return { 1, now }
`;

/** Sets the shared pause unless a longer one is already running: a pause only ever extends. */
export const PAUSE = `
local ms = tonumber(ARGV[1])
if redis.call("PTTL", KEYS[1]) < ms then redis.call("SET", KEYS[1], "1", "PX", ms) end
return redis.call("PTTL", KEYS[1])
`;

/**
 * Read-only: slots inside the window (all, active, full), the pause left, and the slots of the
 * last ARGV[2] ms (all, active, full: the rate each is spent at now). KEYS: log, pause, active
 * log, full log.
 */
export const STATE = `
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for _, since in ipairs({ now - tonumber(ARGV[1]), now - tonumber(ARGV[2]) }) do
  for _, log in ipairs({ KEYS[1], KEYS[3], KEYS[4] }) do
    table.insert(out, redis.call("ZCOUNT", log, "(" .. since, "+inf"))
  end
end
table.insert(out, math.max(0, redis.call("PTTL", KEYS[2])))
return out
`;
