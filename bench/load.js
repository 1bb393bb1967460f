// The bench's load generator in Node (autocannon), in its own process so that it can be pinned to a
// CPU like wrk: the same requests as bench/ids.lua, for --seconds S (when wrk is not installed) or
// for exactly --requests N (bench/instructions.js), with BENCH_IDS small, snowflake, spaced or mixed (the
// default) or random as there. Prints one `BENCH_RESULT {json}` line in wrk's terms.
//   node bench/load.js <url> --connections C (--seconds S | --requests N)
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { TOKEN } from './util.js'

const { values: args, positionals: [url] } = parseArgs({
  allowPositionals: true,
  options: { connections: { type: 'string', default: '50' }, seconds: { type: 'string' }, requests: { type: 'string' } }
})
const mode = process.env.BENCH_IDS ?? 'mixed'
let nextId = Number(process.env.BENCH_ID_BASE ?? 1)
let sent = 0
/** The next body, as bench/ids.lua writes it. */
function body () {
  if (mode === 'random') return `{"id":${1 + Math.floor(Math.random() * (2 ** 53 - 2))},"name":"bench plant"}`
  const n = ++nextId
  if (mode === 'ascending') return `{"id":${n},"name":"bench plant"}`
  const big = mode === 'snowflake' || mode === 'spaced' || (mode === 'mixed' && ++sent % 2 === 0)
  const id = big ? 1234567890n * 10n ** 9n + BigInt(mode === 'spaced' ? n * 1024 : n) : n
  return `{"id":${id},"name":"bench plant","tag":"bench tag"}`
}

const result = await autocannon({
  url,
  connections: Number(args.connections),
  ...(args.requests === undefined ? { duration: Number(args.seconds ?? 10) } : { amount: Number(args.requests), timeout: 600 }),
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.BENCH_TOKEN ?? TOKEN}` },
  requests: [{
    setupRequest (request) {
      return { ...request, body: body() }
    }
  }]
})

const us = (ms) => Math.round(ms * 1000)
process.stdout.write('BENCH_RESULT ' + JSON.stringify({
  requests: result.requests.total,
  durationUs: Math.round(result.duration * 1e6),
  p50Us: us(result.latency.p50),
  p99Us: us(result.latency.p99),
  maxUs: us(result.latency.max),
  non2xx: result.non2xx,
  connectErrors: result.errors - result.timeouts,
  readErrors: 0,
  writeErrors: 0,
  timeouts: result.timeouts
}) + '\n')
