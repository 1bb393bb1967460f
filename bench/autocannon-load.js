// The load generator used when wrk is not installed: autocannon with the same requests as
// bench/unique-ids.lua (a valid POST /plants, a new id each time, a valid bearer token), run as its
// own process so that it can be pinned to a CPU like wrk. Prints one `BENCH_RESULT {json}` line.
// Usage: node bench/autocannon-load.js <url> <connections> <seconds>
import autocannon from 'autocannon'

const [url, connections, seconds] = process.argv.slice(2)
const token = process.env.BENCH_TOKEN ?? 'bench-token'
const name = process.env.BENCH_NAME ?? 'bench plant'
let nextId = Number(process.env.BENCH_ID_BASE ?? 2 ** 32)

const result = await autocannon({
  url,
  connections: Number(connections),
  duration: Number(seconds),
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
  requests: [{
    setupRequest (request) {
      nextId += 1
      return { ...request, body: `{"id":${nextId},"name":${JSON.stringify(name)}}` }
    }
  }]
})

const us = (ms) => Math.round(ms * 1000)
process.stdout.write('BENCH_RESULT ' + JSON.stringify({
  requests: result.requests.total,
  durationUs: Math.round(result.duration * 1e6),
  bytes: result.throughput.total,
  p50Us: us(result.latency.p50),
  p90Us: us(result.latency.p90),
  p99Us: us(result.latency.p99),
  maxUs: us(result.latency.max),
  meanUs: us(result.latency.average),
  non2xx: result.non2xx,
  connectErrors: result.errors - result.timeouts,
  readErrors: 0,
  writeErrors: 0,
  timeouts: result.timeouts
}) + '\n')
