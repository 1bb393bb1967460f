#!/usr/bin/env node
// Soak: sustained load on the built server (dist/server.js) for minutes, mixing valid creates,
// replays, conflicts and invalid requests, sampling the server's RSS (/proc/<pid>/status), heap and
// event-loop delay (prom-client's default metrics, scraped from METRICS_PORT) over time. It says
// whether RSS levelled off during the phase that stores nothing new: replays, conflicts and invalid
// requests must not make the process grow. Localhost only; bounded in time and request count.
//
//   npm run soak -- [--minutes 5] [--connections 20] [--samples 20]
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { createServer } from 'node:net'
import { parseArgs } from 'node:util'

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '5' },
    connections: { type: 'string', default: '20' },
    samples: { type: 'string', default: '20' }
  }
})
const minutes = Math.min(240, Math.max(0.25, Number(values.minutes)))
const connections = Math.min(500, Math.max(1, Number(values.connections)))
const samples = Math.min(500, Math.max(4, Number(values.samples)))
const durationMs = minutes * 60000
// The first quarter creates plants (the store grows, as it should); the rest creates none.
const growthPhaseMs = durationMs / 4
const TOKEN = 'soak-token-0123456789'
const SERVER = new URL('../dist/server.js', import.meta.url).pathname

async function freePort () {
  const server = createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

const port = await freePort()
const metricsPort = await freePort()
const child = spawn(process.execPath, [SERVER], {
  env: { PATH: process.env.PATH, API_TOKENS: TOKEN, PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: String(metricsPort), MAX_PLANTS: '16000000' },
  stdio: ['ignore', 'ignore', 'inherit']
})
const stopServer = () => { if (child.exitCode === null) child.kill('SIGTERM') }
process.on('exit', stopServer)

const rssMiB = () => {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))
  return match === null ? NaN : Number(match[1]) / 1024
}

const agent = new Agent({ keepAlive: true, maxSockets: connections })
function send (body, { token = TOKEN, type = 'application/json' } = {}) {
  const started = performance.now()
  return new Promise((resolve) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/plants',
      method: 'POST',
      agent,
      headers: { authorization: `Bearer ${token}`, 'content-type': type, 'content-length': Buffer.byteLength(body) }
    }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - started }))
    })
    req.on('error', (error) => resolve({ status: error.code ?? 'error', ms: performance.now() - started }))
    req.end(body)
  })
}

// prom-client's default metrics; its event-loop lag figures cover the time since the previous scrape.
async function scrape () {
  const text = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text(), () => '')
  const value = (name) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN)
  return {
    loopP99Ms: Math.round(value('nodejs_eventloop_lag_p99_seconds') * 1e5) / 100,
    loopMaxMs: Math.round(value('nodejs_eventloop_lag_max_seconds') * 1e5) / 100,
    heapMiB: Math.round(value('nodejs_heap_size_used_bytes') / 1048576)
  }
}

const deadline = Date.now() + 15000
while (Date.now() < deadline && await send('{}').then((r) => typeof r.status !== 'number', () => true)) {
  await new Promise((resolve) => setTimeout(resolve, 100))
}

// The traffic. Each kind knows the status it must get; any other is counted as unexpected.
const created = [] // [id, name] of stored plants, to replay and to conflict with
let nextId = 1
const pick = (list) => list[Math.floor(Math.random() * list.length)]
const invalidBodies = [
  () => ['{"id":', 400],
  () => ['{"id":"5","name":"x"}', 400],
  () => ['{"id":1.5,"name":"x"}', 400],
  () => ['[1,2,3]', 400],
  () => ['{"id":9223372036854775808,"name":"x"}', 400],
  () => [Buffer.concat([Buffer.from('{"id":1,"name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]), 400],
  () => [`{"id":1,"name":"${'x'.repeat(20000)}"}`, 413]
]
function nextRequest (growing) {
  const roll = Math.random()
  if (growing && (roll < 0.4 || created.length === 0)) {
    const id = nextId++
    const name = `plant ${id}`
    return { kind: 'create', body: `{"id":${id},"name":"${name}"}`, expect: 200, onOk: () => created.push([id, name]) }
  }
  if (created.length === 0) return { kind: 'invalid', body: '{"id":', expect: 400 }
  if (roll < 0.6) {
    const [id, name] = pick(created)
    return { kind: 'replay', body: `{"id":${id},"name":"${name}"}`, expect: 200 }
  }
  if (roll < 0.75) {
    const [id] = pick(created)
    return { kind: 'conflict', body: `{"id":${id},"name":"another ${Math.random()}"}`, expect: 409 }
  }
  if (roll < 0.8) return { kind: 'invalid', body: '{"id":1,"name":"x"}', expect: 401, token: 'wrong-token' }
  if (roll < 0.85) return { kind: 'invalid', body: '{"id":1,"name":"x"}', expect: 415, type: 'text/plain' }
  const [body, expect] = pick(invalidBodies)()
  return { kind: 'invalid', body, expect }
}

const started = Date.now()
let window = { requests: 0, unexpected: 0, latencies: [], kinds: {} }
const totals = { requests: 0, unexpected: 0, errors: 0 }
const rows = []
const workers = Array.from({ length: connections }, async () => {
  while (Date.now() - started < durationMs && totals.requests < 1e9) {
    const growing = Date.now() - started < growthPhaseMs
    const next = nextRequest(growing)
    const reply = await send(next.body, next)
    totals.requests++
    window.requests++
    window.kinds[next.kind] = (window.kinds[next.kind] ?? 0) + 1
    if (window.latencies.length < 200000) window.latencies.push(reply.ms)
    if (typeof reply.status !== 'number') totals.errors++
    if (reply.status !== next.expect) {
      totals.unexpected++
      window.unexpected++
    } else next.onOk?.()
  }
})

const sampleEveryMs = durationMs / samples
async function sample () {
  const health = await scrape()
  const elapsed = Date.now() - started
  const sorted = window.latencies.sort((a, b) => a - b)
  const q = (p) => sorted.length === 0 ? NaN : Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] * 10) / 10
  rows.push({
    't (s)': Math.round(elapsed / 1000),
    phase: elapsed <= growthPhaseMs + 1000 ? 'creates+all' : 'no creates',
    'req/s': Math.round(window.requests / (sampleEveryMs / 1000)),
    'mix c/r/x/i': ['create', 'replay', 'conflict', 'invalid'].map((k) => window.kinds[k] ?? 0).join('/'),
    unexpected: window.unexpected,
    'lat p50 ms': q(0.5),
    'lat p99 ms': q(0.99),
    'loop p99 ms': health.loopP99Ms,
    'loop max ms': health.loopMaxMs,
    'heap MiB': health.heapMiB,
    'RSS MiB': Math.round(rssMiB()),
    plants: created.length
  })
  process.stdout.write(`${JSON.stringify(rows.at(-1))}\n`)
  window = { requests: 0, unexpected: 0, latencies: [], kinds: {} }
}
// A sample still scraping when the load ends is awaited before the server stops.
let sampling = Promise.resolve()
const sampler = setInterval(() => { sampling = sample() }, sampleEveryMs)

await Promise.all(workers)
clearInterval(sampler)
await sampling
agent.destroy()
stopServer()
await new Promise((resolve) => child.once('exit', resolve))

console.log(`\nsoak: ${minutes} min, ${connections} connections, ${totals.requests} requests, ${totals.unexpected} with an unexpected status (${totals.errors} connection errors); Node ${process.version}`)
console.table(rows)

// The verdict, on the phase that stores nothing new: after its first half (warm-up: the heap and
// allocator settle), RSS must not keep climbing. "Levelled off": the last sample is within 5 %
// (or 8 MiB) of the highest sample of the steady half's first sample.
const steady = rows.filter((row) => row.phase === 'no creates')
const half = steady.slice(Math.floor(steady.length / 2))
if (half.length < 2) {
  console.log('verdict: too few samples in the phase without creates; run longer (--minutes) or with more --samples')
  process.exit(1)
}
const first = half[0]['RSS MiB']
const last = half.at(-1)['RSS MiB']
const growth = last - first
const levelled = growth <= Math.max(8, first * 0.05)
console.log(`verdict: on replay, conflict and invalid traffic RSS went from ${first} MiB to ${last} MiB over the last ${half.at(-1)['t (s)'] - half[0]['t (s)']} s (${growth >= 0 ? '+' : ''}${growth} MiB): ${levelled ? 'levelled off (no leak seen)' : 'STILL GROWING (possible leak)'}`)
process.exit(levelled && totals.unexpected === 0 ? 0 : 1)
