// npm run bench: the service against the same contract written the obvious way (bench/peer.js) and
// bare Fastify (bench/baseline-fastify.js), and its PostgreSQL store against pgbench, in one table.
// Every server is started fresh in each round (A B C, A B C, …), its stdout written to a file.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { freshDatabase, pgbench, postgresProblem } from './postgres.js'
import {
  cpuSeconds, fmt, has, idMix, ID_MIXES, load, machine as describeMachine, median, pinning, positive, ratio, RESULTS,
  serviceEnv, SERVERS, startServer, stopServer, vmRssBytes
} from './util.js'

const TARGETS = ['baseline-fastify', 'peer', 'memory', 'postgres', 'pgbench']
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string' },
    warmup: { type: 'string' },
    rounds: { type: 'string' },
    starts: { type: 'string' },
    connections: { type: 'string' },
    'pg-connections': { type: 'string' },
    targets: { type: 'string', default: TARGETS.join(',') },
    tool: { type: 'string' },
    ids: { type: 'string', default: 'mixed' },
    'no-pin': { type: 'boolean', default: false },
    out: { type: 'string', default: join(RESULTS, 'bench-latest.md') },
    help: { type: 'boolean', short: 'h', default: false }
  }
})
if (args.help) {
  console.log(`npm run bench -- [options]
  --duration S         measured seconds per server and round (default 10)
  --warmup S           load before each measured window, not counted (default 3; 0: none)
  --rounds N           interleaved rounds; the table shows medians (default 3)
  --starts N           starts per server and round, timed to the first 2xx of POST /plants (default 3)
  --connections N      connections to the HTTP servers (default 50)
  --pg-connections N   connections to the PostgreSQL store and pgbench's clients (default 16)
  --targets a,b        any of ${TARGETS.join(', ')} (default: all)
  --tool wrk|autocannon  load generator (default: wrk when installed)
  --ids ${ID_MIXES.join('|')}  ids below 2^32, of 19 digits, or half of each (default mixed); every body has a tag
  --no-pin             do not pin the servers to CPU 0 and the load generator to CPU 1
  --out FILE           the Markdown result (default bench/results/bench-latest.md; a .json beside it)
env: BENCH_DATABASE_URL, the PostgreSQL server for postgres and pgbench (default postgres://postgres@127.0.0.1:5432/test)`)
  process.exit(0)
}

const options = {
  duration: positive(args.duration, 10, 'duration'),
  warmup: args.warmup === '0' ? 0 : positive(args.warmup, 3, 'warmup'),
  rounds: Math.round(positive(args.rounds, 3, 'rounds')),
  starts: Math.round(positive(args.starts, 3, 'starts')),
  connections: Math.round(positive(args.connections, 50, 'connections')),
  pgConnections: Math.round(positive(args['pg-connections'], 16, 'pg-connections')),
  ids: idMix(args.ids)
}
const targets = args.targets.split(',').map((t) => t.trim()).filter(Boolean)
for (const t of targets) {
  if (!TARGETS.includes(t)) { console.error(`bench: unknown target ${t}; targets: ${TARGETS.join(', ')}`); process.exit(2) }
}
const tool = args.tool ?? (has('wrk', ['--version']) ? 'wrk' : 'autocannon')
if (tool !== 'wrk' && tool !== 'autocannon') { console.error('bench: --tool must be wrk or autocannon'); process.exit(2) }
const { pin, pinned } = pinning(!args['no-pin'])
const logs = join(RESULTS, 'logs')
mkdirSync(logs, { recursive: true })
const machine = describeMachine()
const startedAt = new Date()

console.log(`Plant Store benchmark, ${startedAt.toISOString()}`)
console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGB} GB, node ${machine.node}`)
console.log(`${tool}${tool === 'wrk' ? '' : ' (wrk is not installed: apt-get install wrk; autocannon saturates itself near 50k req/s on 2 cores)'}; ` +
  `${pin ? 'servers on CPU 0, load on CPU 1' : 'no CPU pinning'}; ${options.rounds} rounds × (${options.warmup} s warm-up + ${options.duration} s); ` +
  `${options.connections} connections (postgres and pgbench ${options.pgConnections}); ${options.ids} ids; server logs in bench/results/logs/\n`)

// Each load counts from its own multiple of 2^24 (16.7 million requests), so that small ids stay below 2^32.
let loads = 0
const idBase = () => 2 ** 24 * ++loads

/** One round of one HTTP server: --starts starts (the last one loaded), warm-up, measured window. */
async function measureServer (name, round) {
  let env = SERVERS[name]?.env()
  let script = SERVERS[name]?.script
  let db
  if (name === 'postgres') {
    db = await freshDatabase(`service_${round}`)
    env = serviceEnv({ DATABASE_URL: db.url })
    script = SERVERS.memory.script
  }
  const connections = name === 'postgres' ? options.pgConnections : options.connections
  const logFile = join(logs, `${name}.log`)
  const starts = []
  let server
  try {
    for (let i = 0; i < options.starts; i++) {
      if (server !== undefined) await stopServer(server.child)
      server = await startServer(pinned('0', [process.execPath, script]), env, { logFile, probeId: i + 1 })
      starts.push(server.startMs)
    }
    if (options.warmup > 0) await load({ tool, port: server.port, connections, seconds: options.warmup, idBase: idBase(), ids: options.ids, pinned })
    const cpuBefore = cpuSeconds(server.child.pid)
    const r = await load({ tool, port: server.port, connections, seconds: options.duration, idBase: idBase(), ids: options.ids, pinned })
    const cpuAfter = cpuSeconds(server.child.pid)
    const rssBytes = vmRssBytes(server.child.pid)
    // Counted once the server has stopped: the service writes its log asynchronously, and its close writes what it holds.
    await stopServer(server.child)
    const lines = readFileSync(logFile, 'utf8').split('\n').length - 1
    return {
      rps: r.requests / (r.durationUs / 1e6),
      requests: r.requests,
      p50: r.p50Us / 1000,
      p99: r.p99Us / 1000,
      errors: r.errors,
      cpuUs: cpuBefore === null || cpuAfter === null ? null : (cpuAfter - cpuBefore) * 1e6 / r.requests,
      rssMB: (rssBytes ?? Number.NaN) / 2 ** 20,
      starts,
      logLines: lines,
      connections
    }
  } finally {
    if (server !== undefined) await stopServer(server.child)
    await db?.drop().catch(() => {})
  }
}

const rounds = Object.fromEntries(targets.map((t) => [t, []]))
const skipped = {}
const pgProblem = targets.some((t) => t === 'postgres' || t === 'pgbench') ? await postgresProblem() : undefined
for (const t of ['postgres', 'pgbench']) if (pgProblem !== undefined && targets.includes(t)) skipped[t] = pgProblem

for (let round = 1; round <= options.rounds; round++) {
  // Every other round in reverse: a host whose speed drifts during the run favours no server.
  for (const name of round % 2 === 1 ? targets : targets.toReversed()) {
    if (skipped[name] !== undefined) continue
    let r
    try {
      r = name === 'pgbench'
        ? { ...await pgbench({ clients: options.pgConnections, warmup: options.warmup, seconds: options.duration, dir: logs, pinned }), connections: options.pgConnections }
        : await measureServer(name, round)
    } catch (error) {
      skipped[name] = error.message
      console.log(`round ${round}/${options.rounds} ${name.padEnd(16)} SKIPPED: ${error.message}`)
      continue
    }
    rounds[name].push(r)
    console.log(`round ${round}/${options.rounds} ${name.padEnd(16)} ${fmt(r.rps).padStart(8)} req/s  p99 ${fmt(r.p99, 2)} ms` +
      (r.starts === undefined ? '' : `  cpu ${fmt(r.cpuUs)} µs/req  start ${r.starts.map((s) => fmt(s)).join('/')} ms`) +
      (r.errors > 0 ? `  !! ${r.errors} non-2xx or socket errors` : ''))
  }
}

// Medians over the rounds; the start time is the median of every start of every round.
const S = {}
for (const [name, rs] of Object.entries(rounds)) {
  if (rs.length === 0) continue
  S[name] = {
    rps: median(rs.map((r) => r.rps)),
    p50: median(rs.map((r) => r.p50)),
    p99: median(rs.map((r) => r.p99)),
    cpuUs: median(rs.map((r) => r.cpuUs)),
    rssMB: median(rs.map((r) => r.rssMB)),
    startMs: median(rs.flatMap((r) => r.starts ?? [])),
    errors: rs.reduce((a, r) => a + r.errors, 0),
    connections: rs[0].connections
  }
}

/** Four decimals near a multiple of 0.05, where every target lies: 0.7998 must not read as a passing "0.80×". */
const times = (v) => {
  const off = Math.abs(v - Math.round(v * 20) / 20)
  return `${fmt(v, off > 0 && off < 0.005 ? 4 : 2)}×`
}
const check = (measure, target, value, pass, detail = '') => ({
  measure,
  target,
  value: value === null ? '–' : `${times(value)}${detail}`,
  result: value === null ? 'SKIP' : pass(value) ? 'PASS' : 'FAIL'
})
/** The ratio of each round, which the median hides: a shared machine spreads them widely. */
const byRound = (a, b) => {
  const each = rounds[a]?.map((r, i) => ratio(r.rps, rounds[b]?.[i]?.rps)).filter((v) => v !== null) ?? []
  return each.length < 2 ? '' : ` (by round ${each.map(times).join(', ')})`
}
const rps = ratio(S.memory?.rps, S.peer?.rps)
const checks = [
  check('service req/s vs peer', '≥ 1.0×', rps, (v) => v >= 1.0, byRound('memory', 'peer')),
  check('service req/s vs peer, moonshot', '≥ 1.25×', rps, (v) => v >= 1.25),
  check('service p99 vs peer p99', '≤ 1.0×', ratio(S.memory?.p99, S.peer?.p99), (v) => v <= 1.0, ` (${fmt(S.memory?.p99, 2)} vs ${fmt(S.peer?.p99, 2)} ms)`),
  check('service start to first 2xx of POST /plants vs bare Fastify', '≤ 1.3×', ratio(S.memory?.startMs, S['baseline-fastify']?.startMs), (v) => v <= 1.3,
    ` (${fmt(S.memory?.startMs)} vs ${fmt(S['baseline-fastify']?.startMs)} ms)`),
  check(`PostgreSQL store req/s vs pgbench (${options.pgConnections} connections)`, '≥ 0.80×', ratio(S.postgres?.rps, S.pgbench?.rps), (v) => v >= 0.80,
    byRound('postgres', 'pgbench'))
]
// A server that answers errors is broken, however fast it is: the only failure of the run's exit status.
for (const [name, row] of Object.entries(S)) {
  if (row.errors > 0) checks.push({ measure: `${name} answered only 2xx`, target: '0 errors', value: String(row.errors), result: 'FAIL' })
}

const header = ['target', 'req/s', 'p50 ms', 'p99 ms', '× peer', 'CPU µs/req', 'RSS MB', 'start ms', 'errors']
const rows = Object.entries(S).map(([name, r]) => [
  name + (r.connections === options.connections ? '' : ` (${r.connections} conn)`),
  fmt(r.rps), fmt(r.p50, 2), fmt(r.p99, 2), fmt(ratio(r.rps, S.peer?.rps), 2), fmt(r.cpuUs), fmt(r.rssMB), fmt(r.startMs), String(r.errors)
])
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)))
const line = (cells) => cells.map((c, i) => i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])).join('  ')
console.log(`\n${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${rows.map(line).join('\n')}\n`)
for (const [name, why] of Object.entries(skipped)) console.log(`skipped ${name}: ${why}`)
for (const c of checks) console.log(`${c.result.padEnd(4)}  ${c.measure}: ${c.value} (target ${c.target})`)

const settings = `${tool}${pin ? ', servers on CPU 0, load on CPU 1' : ', no pinning'}, ${options.rounds} rounds × (${options.warmup} s warm-up + ${options.duration} s), ` +
  `${options.starts} starts per server and round, ${options.connections} connections (postgres and pgbench ${options.pgConnections}), ${options.ids} ids`
const md = [
  `# npm run bench, ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  '',
  `Machine: ${machine.cpu}, ${machine.cores} cores (shared by the server and the load generator), ${machine.memoryGB} GB, ${machine.os}, Node ${machine.node}.`,
  `Settings: ${settings}. Medians over the rounds; every request a valid POST /plants with a new id and a tag.`,
  '',
  `| ${header.join(' | ')} |`,
  `|${header.map((_, i) => i === 0 ? '---' : '---:').join('|')}|`,
  ...rows.map((r) => `| ${r.join(' | ')} |`),
  '',
  ...Object.entries(skipped).map(([name, why]) => `- skipped ${name}: ${why}`),
  '| check | target | value | result |',
  '|---|---|---|---|',
  ...checks.map((c) => `| ${c.measure} | ${c.target} | ${c.value} | ${c.result} |`),
  ''
].join('\n')
mkdirSync(RESULTS, { recursive: true })
writeFileSync(args.out, md)
writeFileSync(args.out.replace(/\.md$/, '') + '.json', JSON.stringify({ date: startedAt.toISOString(), machine, tool, pinned: pin, options, summary: S, rounds, skipped, checks }, null, 2) + '\n')
console.log(`\nwritten: ${args.out} (and .json)`)
process.exitCode = checks.some((c) => c.measure.endsWith('answered only 2xx')) ? 1 : 0
