-- wrk script of the bench: every request is a valid POST /plants with a new id and a valid bearer token.
-- The ids of `npm run bench`, each body with a tag (a counter n ascends from BENCH_ID_BASE, each thread 2^28 apart):
--   BENCH_IDS=small      n itself: the caller keeps it below 2^32
--   BENCH_IDS=snowflake  1234567890 * 10^9 + n: 19 digits, as Twitter-style snowflake ids have (past 2^53)
--   BENCH_IDS=mixed      small and snowflake by turns, the default
--   BENCH_IDS=spaced     1234567890 * 10^9 + 1024 * n: 19 digits, each a different double (doubles there are 256 apart)
-- The fills of `npm run bench:scale`, with no tag:
--   BENCH_IDS=ascending  n itself
--   BENCH_IDS=random     uniform from 1 to 2^53 - 1 (LuaJIT's math.random has 52 bits), seeded with BENCH_ID_BASE
-- done() prints one line `BENCH_RESULT {json}` that the bench reads.

local token = os.getenv("BENCH_TOKEN") or "bench-token-0123456789abcdef"
local mode = os.getenv("BENCH_IDS") or "mixed"
local id_base = tonumber(os.getenv("BENCH_ID_BASE") or "1")
local thread_count = 0

function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
end

local next_id = 0
local sent = 0

function init(args)
  next_id = id_base + (thread_index or 0) * 268435456
  math.randomseed(id_base + (thread_index or 0) * 7919)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. token
end

-- LuaJIT's numbers are doubles: the 19 digits are written as two exact halves.
local function snowflake(n)
  return string.format("%d%09d", 1234567890 + math.floor(n / 1e9), n % 1e9)
end

function request()
  if mode == "random" then
    local id = 1 + math.floor(math.random() * 9007199254740990)
    return wrk.format(nil, nil, nil, string.format('{"id":%.0f,"name":"bench plant"}', id))
  end
  next_id = next_id + 1
  if mode == "ascending" then
    return wrk.format(nil, nil, nil, string.format('{"id":%.0f,"name":"bench plant"}', next_id))
  end
  sent = sent + 1
  local big = mode == "snowflake" or (mode == "mixed" and sent % 2 == 0)
  local id = big and snowflake(next_id) or string.format("%.0f", next_id)
  if mode == "spaced" then id = snowflake(next_id * 1024) end
  return wrk.format(nil, nil, nil, '{"id":' .. id .. ',"name":"bench plant","tag":"bench tag"}')
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
