// Per-line cost of the access line (access-log.ts, AccessLog.requestCompleted) without and with a
// client, in a warm loop, written to a stream that drops it: what `client` adds to a request.
// Usage: npm run build && node bench/access-line.js [lines]  → one `BENCH_RESULT {json}` line
import pino from 'pino'
import { AccessLog } from '../dist/plugins/access-log.js'
import { createTokenSet } from '../dist/plugins/auth.js'

const lines = Number(process.argv[2] ?? 1_000_000)
const root = pino({ level: 'info' }, { write () {} })
const set = createTokenSet([{ name: 'billing', token: 'billing-token' }, 'unnamed-token'])
const cases = {
  'no client (401)': null,
  named: set.identify('billing-token'),
  unnamed: set.identify('unnamed-token')
}
const result = {}
for (const [name, client] of Object.entries(cases)) {
  const log = new AccessLog()
  const request = { id: '3f9c0a1b2c3d4e5f-2bx', method: 'POST', routeOptions: { url: '/plants' }, headers: {}, client, server: { log: root } }
  const reply = { log: root, statusCode: 200, elapsedTime: 1.234 }
  const run = (n) => { for (let i = 0; i < n; i++) log.requestCompleted(null, request, reply) }
  run(200_000)
  const start = process.cpuUsage()
  run(lines)
  const used = process.cpuUsage(start)
  result[name] = Math.round(((used.user + used.system) * 1000) / lines)
}
console.log(`BENCH_RESULT ${JSON.stringify({ lines, nsPerLine: result })}`)
