// Fills a memory store with new plants until it answers 507, for the container suite's memory-limit
// test. Its own process (as bench/autocannon-load.js is), so that the latency it measures is the
// service's, not the test runner's. autocannon: a new id per request, ~20-byte names, 10 connections.
// Stops one second after the first 507, or after the time limit. Prints one JSON line.
//   usage: node test/container/fill-until-full.mjs <url> <token> <max seconds>
import autocannon from 'autocannon'

const [url, token, seconds] = process.argv.slice(2)
const NAME = 'a container plant 20' // 20 bytes
const AFTER_FULL_MS = 1000
let nextId = 0
let firstFullAt
const afterFull = {} // status → count, of the answers after the first 507
const LAST = 500
const last = []

const instance = autocannon({
  url: `${url}/plants`,
  connections: 10,
  duration: Number(seconds),
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
  requests: [{
    setupRequest (request) {
      nextId += 1
      return { ...request, body: `{"id":${nextId},"name":"${NAME}"}` }
    }
  }]
})
instance.on('response', (_client, statusCode) => {
  last.push(statusCode)
  if (last.length > LAST) last.shift()
  if (statusCode === 507 && firstFullAt === undefined) {
    firstFullAt = Date.now()
    // The store is full: keep asking for a second, so that "ends in 507s" is seen, not assumed.
    setTimeout(() => instance.stop(), AFTER_FULL_MS)
  } else if (firstFullAt !== undefined) {
    afterFull[statusCode] = (afterFull[statusCode] ?? 0) + 1
  }
})
const result = await instance
const statuses = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count]))
process.stdout.write(JSON.stringify({
  requests: result.requests.total,
  seconds: result.duration,
  statuses,
  full: firstFullAt !== undefined,
  afterFull,
  lastStatuses: [...new Set(last)], // of the last 500 answers
  p50Ms: result.latency.p50,
  p99Ms: result.latency.p99,
  maxMs: result.latency.max,
  errors: result.errors,
  timeouts: result.timeouts
}) + '\n')
