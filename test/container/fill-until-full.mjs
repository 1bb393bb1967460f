// Load for the container suite's memory-limit test, in its own process (as bench/autocannon-load.js
// is), so that what it measures is the service's, not the test runner's. Prints one JSON line.
//   fill:  node test/container/fill-until-full.mjs <url> <token> fill <max seconds to full> <seconds after full>
//          new plants (a new id per request, 512-byte names, 10 connections) until the first 507,
//          then the same load on for <seconds after full>: load that does not stop when the store is full.
//   burst: node test/container/fill-until-full.mjs <url> <token> burst <seconds>
//          64 connections replaying one plant with a 16,000-byte name (the body near BODY_LIMIT):
//          load that stores nothing new, as heavy on memory as a valid request can be.
import autocannon from 'autocannon'

const [url, token, mode, ...rest] = process.argv.slice(2)
const seconds = rest.map(Number)
const LAST = 500
const last = []
let firstFullAt
let stopTimer

const fill = mode === 'fill'
const name = 'p'.repeat(fill ? 512 : 16000)
let nextId = 0
const instance = autocannon({
  url: `${url}/plants`,
  connections: fill ? 10 : 64,
  // fill: the time to full is not known; the load stops itself <seconds after full> after it.
  duration: fill ? seconds[0] + seconds[1] : seconds[0],
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
  requests: [{
    setupRequest (request) {
      nextId += 1
      // fill: ids from 1,000,001, clear of the plants the test stored before (the burst's id 1, its check's id 2).
      return { ...request, body: `{"id":${fill ? 1_000_000 + nextId : 1},"name":"${name}"}` }
    }
  }]
})
const started = Date.now()
instance.on('response', (_client, statusCode) => {
  last.push(statusCode)
  if (last.length > LAST) last.shift()
  if (fill && statusCode === 507 && firstFullAt === undefined) {
    firstFullAt = Date.now()
    // The store is full: the load goes on, so that what happens then is seen, not assumed.
    stopTimer = setTimeout(() => instance.stop(), seconds[1] * 1000)
  }
})
const result = await instance
clearTimeout(stopTimer)
const statuses = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count]))
process.stdout.write(JSON.stringify({
  requests: result.requests.total,
  seconds: result.duration,
  statuses,
  full: firstFullAt !== undefined,
  // How long the load went on after the first 507.
  secondsAfterFull: firstFullAt === undefined ? 0 : (Date.now() - firstFullAt) / 1000,
  secondsToFull: firstFullAt === undefined ? null : (firstFullAt - started) / 1000,
  lastStatuses: [...new Set(last)], // of the last 500 answers
  p50Ms: result.latency.p50,
  p99Ms: result.latency.p99,
  maxMs: result.latency.max,
  errors: result.errors,
  timeouts: result.timeouts,
  non2xx: result.non2xx
}) + '\n')
