-- wrk script for `npm run bench:scale` (bench/scale.js): every request is a valid POST /plants
-- with a new id, random or ascending, and a valid bearer token.
--   SCALE_IDS=random     ids drawn uniformly from 1 to 2^53 - 1 (LuaJIT's math.random has 52 bits;
--                        seeded with SCALE_SEED, which bench/scale.js changes for every window)
--   SCALE_IDS=ascending  SCALE_ID_BASE + 1, + 2, … (each thread 2^40 apart; one thread by default)
-- done() prints one line `BENCH_RESULT {json}` that bench/scale.js reads, with the longest request.

local token = os.getenv("BENCH_TOKEN") or "bench-token"
local mode = os.getenv("SCALE_IDS") or "random"
local id_base = tonumber(os.getenv("SCALE_ID_BASE") or "0")
local seed = tonumber(os.getenv("SCALE_SEED") or "1")
local thread_count = 0

function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
end

local next_id = 0

function init(args)
  next_id = id_base + (thread_index or 0) * 1099511627776
  math.randomseed(seed + (thread_index or 0) * 7919)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. token
end

function request()
  local id
  if mode == "ascending" then
    next_id = next_id + 1
    id = next_id
  else
    id = 1 + math.floor(math.random() * 9007199254740990)
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
