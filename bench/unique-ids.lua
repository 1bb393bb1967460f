-- wrk script for `npm run bench`: every request is a valid POST /plants with a new id and a valid
-- bearer token. Ids are unique per run, per thread and per request:
--   BENCH_ID_BASE (set by bench/run.js, different for every wrk run) + thread * 2^28 + counter.
-- They stay below 10^13 (13 digits): ordinary int64 ids that JSON.parse keeps exact.
-- done() prints one line `BENCH_RESULT {json}` that bench/run.js reads.

local token = os.getenv("BENCH_TOKEN") or "bench-token"
local id_base = tonumber(os.getenv("BENCH_ID_BASE") or "4294967296")
local name = os.getenv("BENCH_NAME") or "bench plant"
local thread_count = 0

function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
end

local next_id = 0

function init(args)
  next_id = id_base + (thread_index or 0) * 268435456
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. token
end

function request()
  next_id = next_id + 1
  return wrk.format(nil, nil, nil, string.format('{"id":%.0f,"name":"%s"}', next_id, name))
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"durationUs":%d,"bytes":%d,"p50Us":%d,"p90Us":%d,"p99Us":%d,"maxUs":%d,"meanUs":%.1f,' ..
    '"non2xx":%d,"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    e.status, e.connect, e.read, e.write, e.timeout))
end
