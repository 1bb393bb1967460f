// Per-request cost of checking a bearer token (auth.ts, createTokenSet().identify), plain entries
// against hashed (name:sha256:<hex>) ones, in a warm loop; a CPU-time figure per check, not req/s.
// Each case checks an accepted token (the common case) and a refused one of the same length.
// Usage: npm run build && node bench/token-check.js [checks] [case]  → one `BENCH_RESULT {json}` line
// For instruction counts (steady on a busy machine), run one case under callgrind at two loop sizes
// and divide the difference: see bench/README.md, "Token check".
import { createHash } from 'node:crypto'
import { createTokenSet } from '../dist/plugins/auth.js'

const checks = Number(process.argv[2] ?? 2_000_000)
const only = process.argv[3]
const sha256 = (token) => createHash('sha256').update(token).digest('hex')
// 32 random bytes as base64url: the length of a token made with `openssl rand -base64 32`.
const token = (i) => createHash('sha256').update(`token ${i}`).digest('base64url')
const presented = token(0)
const wrong = token(99)

const cases = {
  'plain-1': [presented],
  'named-1': [{ name: 'billing', token: presented }],
  'hashed-1': [{ name: 'billing', sha256: sha256(presented) }],
  'plain-10': Array.from({ length: 10 }, (_, i) => token(i)),
  'hashed-10': Array.from({ length: 10 }, (_, i) => ({ name: `client-${i}`, sha256: sha256(token(i)) })),
  'mixed-5+5': Array.from({ length: 10 }, (_, i) => i % 2 === 0 ? token(i) : { name: `client-${i}`, sha256: sha256(token(i)) })
}

const result = {}
for (const [name, entries] of Object.entries(cases)) {
  if (only !== undefined && only !== name) continue
  const set = createTokenSet(entries)
  if (set.identify(presented) === undefined || set.identify(wrong) !== undefined) throw new Error(`${name}: wrong answer`)
  let found = 0
  const run = (n) => {
    for (let i = 0; i < n; i++) {
      if (set.identify((i & 1) === 0 ? presented : wrong) !== undefined) found++
    }
  }
  run(Math.min(checks, 200_000)) // warm-up: optimised before the measured loop
  const start = process.cpuUsage()
  run(checks)
  const used = process.cpuUsage(start)
  result[name] = Math.round(((used.user + used.system) * 1000) / checks)
  if (found === 0) throw new Error('nothing matched')
}
console.log(`BENCH_RESULT ${JSON.stringify({ checks, nsPerCheck: result })}`)
