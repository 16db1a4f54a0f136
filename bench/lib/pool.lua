-- Feeds wrk from a file of pre-built requests (NUL-separated); each thread takes every n-th one,
-- so no request is sent twice across threads. Prints a JSON summary when done.
local counter = 0
local threads = {}

function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

local reqs = {}
local idx

function init(args)
  local f = assert(io.open(args[1], "rb"))
  local data = f:read("*a")
  f:close()
  for r in string.gmatch(data, "([^%z]+)%z") do reqs[#reqs + 1] = r end
  nthreads = tonumber(args[2])
  idx = tid + 1
end

function request()
  local r = reqs[idx]
  idx = idx + nthreads
  if idx > #reqs then idx = tid + 1 end
  return r
end

function done(summary, latency, requests)
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"errors_connect":%d,"errors_read":%d,"errors_write":%d,"errors_status":%d,"errors_timeout":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration, summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.status, summary.errors.timeout, latency:percentile(50), latency:percentile(99), latency.max))
end
