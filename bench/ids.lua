-- wrk script of the bench: every request is a valid POST /plants with a new id and a valid bearer token.
--   BENCH_IDS=ascending  BENCH_ID_BASE + 1, + 2, ... (each thread 2^28 apart)
--   BENCH_IDS=random     uniform from 1 to 2^53 - 1 (LuaJIT's math.random has 52 bits), seeded with BENCH_ID_BASE
-- done() prints one line `BENCH_RESULT {json}` that the bench reads.

local token = os.getenv("BENCH_TOKEN") or "bench-token-0123456789abcdef"
local mode = os.getenv("BENCH_IDS") or "ascending"
local id_base = tonumber(os.getenv("BENCH_ID_BASE") or "4294967296")
local thread_count = 0

function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
end

local next_id = 0

function init(args)
  next_id = id_base + (thread_index or 0) * 268435456
  math.randomseed(id_base + (thread_index or 0) * 7919)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. token
end

function request()
  local id
  if mode == "random" then
    id = 1 + math.floor(math.random() * 9007199254740990)
  else
    next_id = next_id + 1
    id = next_id
  end
  return wrk.format(nil, nil, nil, string.format('{"id":%.0f,"name":"bench plant"}', id))
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"maxUs":%d,' ..
    '"non2xx":%d,"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), latency.max,
    e.status, e.connect, e.read, e.write, e.timeout))
end
