#!/usr/bin/env node
// Overload: drives the built server (dist/server.js) far past what it can serve, once with load
// shedding on and once with it off, and prints what clients see: the shed rate (503 share),
// latency of the requests that were served, errors and timeouts, and how /livez answered
// meanwhile on fresh connections. Localhost only; every run is bounded in time.
//
//   npm run overload -- [--connections 1000] [--seconds 10] [--name-bytes 8000] [--max-delay-ms 200]
// Runs the given threshold, 50 ms, and shedding off, one after the other.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '10' },
    'name-bytes': { type: 'string', default: '8000' },
    'max-delay-ms': { type: 'string', default: '200' }
  }
})
const connections = Math.min(5000, Number(values.connections))
const seconds = Math.min(300, Number(values.seconds))
const nameBytes = Math.min(16000, Number(values['name-bytes']))
const maxDelayMs = Number(values['max-delay-ms'])
const TOKEN = 'overload-token-0123456789'
const SERVER = new URL('../dist/server.js', import.meta.url).pathname

async function freePort () {
  const server = createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

async function startServer (env) {
  const port = await freePort()
  const child = spawn(process.execPath, [SERVER], {
    // warn: the access log line per request would be a load of its own; refusals are still logged.
    env: { PATH: process.env.PATH, API_TOKENS: TOKEN, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', BODY_LIMIT: '16384', ...env },
    stdio: ['ignore', 'ignore', 'inherit']
  })
  const deadline = Date.now() + 10000
  while (Date.now() < deadline) {
    const ok = await get(port, '/livez').then((r) => r.status === 200, () => false)
    if (ok) return { port, child }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  child.kill('SIGKILL')
  throw new Error('the server did not start')
}

/** GET on a new connection (no pooling): what a load balancer's probe sees. */
function get (port, path) {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, timeout: 10000 }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - started }))
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end()
  })
}

const rssMiB = (pid) => {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return match === null ? NaN : Math.round(Number(match[1]) / 1024)
}

const percentile = (sorted, p) => sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]

async function run (label, env) {
  const { port, child } = await startServer(env)
  const name = 'x'.repeat(nameBytes)
  let id = 0
  const byStatus = new Map()
  const probes = []
  const instance = autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration: seconds,
    timeout: 10,
    requests: [{
      method: 'POST',
      path: '/plants',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      setupRequest: (req) => ({ ...req, body: `{"id":${++id},"name":"${name}"}` })
    }]
  })
  instance.on('response', (_client, status, _bytes, ms) => {
    const entry = byStatus.get(status) ?? { count: 0, latencies: [] }
    entry.count++
    if (entry.latencies.length < 500000) entry.latencies.push(ms)
    byStatus.set(status, entry)
  })
  // A probe of /livez and /readyz every 500 ms while the load runs.
  const probing = (async () => {
    await new Promise((resolve) => setTimeout(resolve, 1000))
    for (let i = 0; i < seconds * 2 - 3; i++) {
      const [live, ready] = await Promise.all([get(port, '/livez').catch(() => ({ status: 'error', ms: NaN })), get(port, '/readyz').catch(() => ({ status: 'error', ms: NaN }))])
      probes.push({ live, ready })
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
  })()
  const result = await instance
  await probing
  const rss = rssMiB(child.pid)
  child.kill('SIGTERM')
  await new Promise((resolve) => child.once('exit', resolve))

  const total = [...byStatus.values()].reduce((sum, e) => sum + e.count, 0)
  const served = byStatus.get(200) ?? { count: 0, latencies: [] }
  const shed = byStatus.get(503) ?? { count: 0, latencies: [] }
  const servedSorted = served.latencies.sort((a, b) => a - b)
  const shedSorted = shed.latencies.sort((a, b) => a - b)
  const liveMs = probes.map((p) => p.live.ms).filter(Number.isFinite).sort((a, b) => a - b)
  return {
    label,
    replies: total,
    'served 200/s': Math.round(served.count / seconds),
    'shed 503 %': total === 0 ? 0 : Math.round(1000 * shed.count / total) / 10,
    'other statuses': [...byStatus.keys()].filter((s) => s !== 200 && s !== 503).join(' ') || '-',
    '200 p50 ms': Math.round(percentile(servedSorted, 0.5)),
    '200 p99 ms': Math.round(percentile(servedSorted, 0.99)),
    '503 p50 ms': Math.round(percentile(shedSorted, 0.5)),
    'errors (timeouts)': `${result.errors} (${result.timeouts})`,
    '/livez ok': `${probes.filter((p) => p.live.status === 200).length}/${probes.length}`,
    '/livez p50 ms': Math.round(percentile(liveMs, 0.5)),
    '/livez max ms': Math.round(liveMs.at(-1) ?? NaN),
    '/readyz 503': `${probes.filter((p) => p.ready.status === 503).length}/${probes.length}`,
    'server RSS MiB': rss
  }
}

console.log(`overload: ${connections} connections for ${seconds} s, POST /plants with a ${nameBytes}-byte name, against dist/server.js (Node ${process.version})`)
const rows = []
for (const delay of [...new Set([maxDelayMs, 50])]) {
  rows.push(await run(`shedding at MAX_EVENT_LOOP_DELAY_MS=${delay}`, { MAX_EVENT_LOOP_DELAY_MS: String(delay) }))
}
rows.push(await run('shedding off (MAX_EVENT_LOOP_DELAY_MS=0)', { MAX_EVENT_LOOP_DELAY_MS: '0' }))
console.table(Object.fromEntries(rows.map(({ label, ...row }) => [label, row])))
