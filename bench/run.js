// npm run bench: the service against the same contract written the obvious way (bench/peer.js) and
// bare Fastify (bench/baseline-fastify.js), and its PostgreSQL store against pgbench, in one table.
// Every server is started fresh in each round (A B C, A B C, …), its stdout written to a file.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { freshDatabase, pgbench, postgresProblem } from './postgres.js'
import {
  cpuSeconds, fmt, gcPauses, has, idMix, ID_MIXES, load, machine as describeMachine, median, pinning, positive, ratio, RESULTS,
  runQueueSeconds, serviceEnv, SERVERS, startServer, stopServer, vmRssBytes
} from './util.js'

// The last one runs only when named: the service on its memory store without METRICS_PORT, what its metrics cost.
const NO_METRICS = 'memory-no-metrics'
const TARGETS = ['baseline-fastify', 'peer', 'memory', 'sqlite', 'postgres', 'pgbench', NO_METRICS]
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string' },
    warmup: { type: 'string' },
    rounds: { type: 'string' },
    starts: { type: 'string' },
    connections: { type: 'string' },
    'pg-connections': { type: 'string' },
    targets: { type: 'string', default: TARGETS.filter((t) => t !== NO_METRICS).join(',') },
    tool: { type: 'string' },
    ids: { type: 'string', default: 'mixed' },
    'no-pin': { type: 'boolean', default: false },
    placement: { type: 'string' },
    'node-options': { type: 'string' },
    'trace-gc': { type: 'boolean', default: false },
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
  --targets a,b        any of ${TARGETS.join(', ')} (default: all but ${NO_METRICS})
  --tool wrk|autocannon  load generator (default: wrk when installed)
  --ids ${ID_MIXES.join('|')}  ids below 2^32, of 19 digits, half of each (default mixed), or of 19
                       digits 1,024 apart, a double each; every body has a tag;
                       several, comma-separated, for one cell each
  --no-pin             do not pin the servers to CPU 0 and the load generator to CPU 1
  --placement pinned,unpinned  one cell each (default pinned, or unpinned with --no-pin)
  --node-options=S     NODE_OPTIONS of every node server (default none), e.g. the image's --node-options=--max-semi-space-size=1
  --trace-gc           node --trace-gc for every node server: GC pauses per 1,000 requests in the measured window
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
  ids: args.ids,
  nodeOptions: args['node-options'] ?? null,
  traceGc: args['trace-gc']
}
const placements = (args.placement ?? (args['no-pin'] ? 'unpinned' : 'pinned')).split(',').map((p) => p.trim())
for (const p of placements) if (p !== 'pinned' && p !== 'unpinned') { console.error('bench: --placement takes pinned, unpinned'); process.exit(2) }
// One cell per id mix and placement; each round runs every cell in turn.
const cells = args.ids.split(',').map((ids) => idMix(ids.trim())).flatMap((ids) => placements.map((placement) => {
  const { pin, pinned } = pinning(placement === 'pinned')
  return { ids, pin, pinned, name: `${ids} ids, ${pin ? 'pinned' : 'unpinned'}` }
}))
const targets = args.targets.split(',').map((t) => t.trim()).filter(Boolean)
for (const t of targets) {
  if (!TARGETS.includes(t)) { console.error(`bench: unknown target ${t}; targets: ${TARGETS.join(', ')}`); process.exit(2) }
}
const tool = args.tool ?? (has('wrk', ['--version']) ? 'wrk' : 'autocannon')
if (tool !== 'wrk' && tool !== 'autocannon') { console.error('bench: --tool must be wrk or autocannon'); process.exit(2) }
const logs = join(RESULTS, 'logs')
mkdirSync(logs, { recursive: true })
const machine = describeMachine()
const startedAt = new Date()

console.log(`Plant Store benchmark, ${startedAt.toISOString()}`)
console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGB} GB, node ${machine.node}`)
console.log(`${tool}${tool === 'wrk' ? '' : ' (wrk is not installed: apt-get install wrk; autocannon saturates itself near 50k req/s on 2 cores)'}; ` +
  `${options.rounds} rounds × (${options.warmup} s warm-up + ${options.duration} s); ${options.connections} connections (postgres and pgbench ` +
  `${options.pgConnections}); cells: ${cells.map((c) => c.name).join('; ')} (pinned: servers on CPU 0, load on CPU 1); ` +
  `NODE_OPTIONS ${options.nodeOptions ?? 'none'}${options.traceGc ? '; --trace-gc' : ''}; server logs in bench/results/logs/\n`)

// Each load counts from its own multiple of 2^24 (16.7 million requests), so that small ids stay below 2^32.
let loads = 0
const idBase = () => 2 ** 24 * ++loads

/** One round of one HTTP server in one cell: --starts starts (the last one loaded), warm-up, measured window. */
async function measureServer (name, round, { ids, pinned }) {
  let env = SERVERS[name]?.env()
  let script = SERVERS[name]?.script
  let db
  if (name === 'postgres') {
    db = await freshDatabase(`service_${round}`)
    env = serviceEnv({ DATABASE_URL: db.url })
    script = SERVERS.memory.script
  }
  if (name === NO_METRICS) {
    env = serviceEnv()
    delete env.METRICS_PORT
    script = SERVERS.memory.script
  }
  if (name === 'sqlite') {
    // A fresh file each round, on the disk the results go to (a tmpfs would flatter its fsyncs).
    db = { dir: mkdtempSync(join(logs, 'sqlite-')) }
    db.drop = async () => rmSync(db.dir, { recursive: true, force: true })
    env = serviceEnv({ DATABASE_URL: `sqlite:${join(db.dir, 'plants.db')}` })
    script = SERVERS.memory.script
  }
  if (options.nodeOptions !== null) env = { ...env, NODE_OPTIONS: options.nodeOptions }
  const argv = [process.execPath, ...options.traceGc ? ['--trace-gc'] : [], script]
  const connections = name === 'postgres' ? options.pgConnections : options.connections
  const logFile = join(logs, `${name}.log`)
  const starts = []
  let server
  try {
    for (let i = 0; i < options.starts; i++) {
      if (server !== undefined) await stopServer(server.child)
      server = await startServer(pinned('0', argv), env, { logFile, probeId: i + 1 })
      starts.push(server.startMs)
    }
    if (options.warmup > 0) await load({ tool, port: server.port, connections, seconds: options.warmup, idBase: idBase(), ids, pinned })
    const sinceStartMs = () => Number(process.hrtime.bigint() - server.started) / 1e6
    const from = sinceStartMs()
    const cpuBefore = cpuSeconds(server.child.pid)
    const waitBefore = runQueueSeconds(server.child.pid)
    const r = await load({ tool, port: server.port, connections, seconds: options.duration, idBase: idBase(), ids, pinned })
    const cpuAfter = cpuSeconds(server.child.pid)
    const waitAfter = runQueueSeconds(server.child.pid)
    const to = sinceStartMs()
    const rssBytes = vmRssBytes(server.child.pid)
    // Counted once the server has stopped: the service writes its log asynchronously, and its close writes what it holds.
    await stopServer(server.child)
    const log = readFileSync(logFile, 'utf8')
    // The JSON lines only: --trace-gc writes its own lines to the same stdout.
    const lines = log.split('\n').filter((l) => l.startsWith('{')).length
    // Lines the service's writer could not keep up with, dropped and counted in its warn lines: such a round flatters it.
    const droppedLines = [...log.matchAll(/"dropped":(\d+),"msg":"log lines dropped/g)].reduce((sum, m) => sum + Number(m[1]), 0)
    // V8 times its lines from the isolate's start, a few ms after the spawn: the window is that much late.
    const gc = options.traceGc ? gcPauses(log, from, to) : undefined
    const perKilo = (v) => v * 1000 / r.requests
    return {
      round,
      rps: r.requests / (r.durationUs / 1e6),
      requests: r.requests,
      p50: r.p50Us / 1000,
      p99: r.p99Us / 1000,
      errors: r.errors,
      cpuUs: cpuBefore === null || cpuAfter === null ? null : (cpuAfter - cpuBefore) * 1e6 / r.requests,
      waitUs: waitBefore === null || waitAfter === null ? null : (waitAfter - waitBefore) * 1e6 / r.requests,
      gc: gc === undefined ? undefined : { ...gc, scavengesPerK: perKilo(gc.scavenges), fullPerK: perKilo(gc.fullGCs), pausePerK: perKilo(gc.pauseMs) },
      rssMB: (rssBytes ?? Number.NaN) / 2 ** 20,
      starts,
      logLines: lines,
      droppedLines,
      connections
    }
  } finally {
    if (server !== undefined) await stopServer(server.child)
    await db?.drop().catch(() => {})
  }
}

const skipped = {}
const pgProblem = targets.some((t) => t === 'postgres' || t === 'pgbench') ? await postgresProblem() : undefined
for (const t of ['postgres', 'pgbench']) if (pgProblem !== undefined && targets.includes(t)) skipped[t] = pgProblem
for (const cell of cells) cell.rounds = Object.fromEntries(targets.map((t) => [t, []]))

const gcText = (gc) => gc === undefined ? '' : `  gc ${fmt(gc.pausePerK, 1)} ms/kreq (${gc.scavenges} young, ${gc.fullGCs} full, longest ${fmt(gc.maxPauseMs, 1)} ms)`
for (let round = 1; round <= options.rounds; round++) {
  // Every other round in reverse, cells and servers alike: a host whose speed drifts during the run favours none.
  for (const cell of round % 2 === 1 ? cells : cells.toReversed()) {
    const label = cells.length > 1 ? ` ${cell.name}` : ''
    for (const name of round % 2 === 1 ? targets : targets.toReversed()) {
      if (skipped[name] !== undefined) continue
      let r
      try {
        r = name === 'pgbench'
          ? { round, ...await pgbench({ clients: options.pgConnections, warmup: options.warmup, seconds: options.duration, dir: logs, pinned: cell.pinned }), connections: options.pgConnections }
          : await measureServer(name, round, cell)
      } catch (error) {
        skipped[name] = error.message
        console.log(`round ${round}/${options.rounds}${label} ${name.padEnd(16)} SKIPPED: ${error.message}`)
        continue
      }
      cell.rounds[name].push(r)
      console.log(`round ${round}/${options.rounds}${label} ${name.padEnd(16)} ${fmt(r.rps).padStart(8)} req/s  p99 ${fmt(r.p99, 2)} ms` +
        (r.starts === undefined ? '' : `  cpu ${fmt(r.cpuUs)} µs/req  waited ${fmt(r.waitUs)} µs/req  start ${r.starts.map((s) => fmt(s)).join('/')} ms`) +
        gcText(r.gc) + (r.errors > 0 ? `  !! ${r.errors} non-2xx or socket errors` : '') +
        (r.droppedLines > 0 ? `  !! ${r.droppedLines} log lines dropped` : ''))
    }
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

/** What each store's req/s is paired with in the rounds' table: the peer, the memory store, pgbench. */
const BASIS = { memory: 'peer', sqlite: 'memory', postgres: 'pgbench', [NO_METRICS]: 'memory' }

/** Medians over the rounds, the checks, and the rows of the table, for one cell. */
function summarise (cell) {
  const { rounds } = cell
  // The start time is the median of every start of every round.
  const S = {}
  for (const [name, rs] of Object.entries(rounds)) {
    if (rs.length === 0) continue
    const gcs = rs.map((r) => r.gc).filter(Boolean)
    S[name] = {
      rps: median(rs.map((r) => r.rps)),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      cpuUs: median(rs.map((r) => r.cpuUs)),
      waitUs: median(rs.map((r) => r.waitUs)),
      gcMsPerK: gcs.length === 0 ? undefined : median(gcs.map((g) => g.pausePerK)),
      gcPerK: gcs.length === 0 ? undefined : median(gcs.map((g) => g.scavengesPerK + g.fullPerK)),
      gcMaxMs: gcs.length === 0 ? undefined : Math.max(...gcs.map((g) => g.maxPauseMs)),
      rssMB: median(rs.map((r) => r.rssMB)),
      startMs: median(rs.flatMap((r) => r.starts ?? [])),
      errors: rs.reduce((a, r) => a + r.errors, 0),
      droppedLines: rs.reduce((a, r) => a + (r.droppedLines ?? 0), 0),
      connections: rs[0].connections
    }
  }
  /** Each round's a ÷ b, paired by round: the statistic the req/s targets are judged by is their median. */
  const paired = (a, b) => (rounds[a] ?? []).map((r) => ratio(r.rps, rounds[b]?.find((o) => o.round === r.round)?.rps)).filter((v) => v !== null)
  const byRound = (each) => each.length < 2 ? '' : ` (by round ${each.map(times).join(', ')})`
  const service = paired('memory', 'peer')
  const postgres = paired('postgres', 'pgbench')
  const sqlite = paired('sqlite', 'memory')
  const p99s = (rounds.memory ?? []).map((r) => [r.p99, rounds.peer?.find((o) => o.round === r.round)?.p99]).filter(([, p]) => p !== undefined)
  const suffix = cells.length > 1 ? `, ${cell.name}` : ''
  let checks = [
    check(`service req/s vs peer${suffix}`, '≥ 1.0×', median(service), (v) => v >= 1.0, byRound(service)),
    check(`service req/s vs peer, moonshot${suffix}`, '≥ 1.25×', median(service), (v) => v >= 1.25),
    check(`service p99 vs peer p99${suffix}`, '≤ 1.0×', ratio(S.memory?.p99, S.peer?.p99), (v) => v <= 1.0,
      ` (${fmt(S.memory?.p99, 2)} vs ${fmt(S.peer?.p99, 2)} ms${p99s.length < 2 ? '' : `; by round ${p99s.map(([a, b]) => `${fmt(a, 1)}/${fmt(b, 1)}`).join(', ')}`})`),
    check(`service start to first 2xx of POST /plants vs bare Fastify${suffix}`, '≤ 1.3×', ratio(S.memory?.startMs, S['baseline-fastify']?.startMs), (v) => v <= 1.3,
      ` (${fmt(S.memory?.startMs)} vs ${fmt(S['baseline-fastify']?.startMs)} ms)`),
    check(`PostgreSQL store req/s vs pgbench (${options.pgConnections} connections)${suffix}`, '≥ 0.80×', median(postgres), (v) => v >= 0.80, byRound(postgres)),
    check(`SQLite store req/s vs memory store${suffix}`, '≥ 0.50×', median(sqlite), (v) => v >= 0.50, byRound(sqlite))
  ]
  // A server that answers errors, or skips its log lines, is broken however fast it is: the only failures of the
  // run's exit status.
  for (const [name, row] of Object.entries(S)) {
    if (row.errors > 0) checks.push({ measure: `${name} answered only 2xx${suffix}`, target: '0 errors', value: String(row.errors), result: 'FAIL', fatal: true })
    if (row.droppedLines > 0) {
      checks.push({ measure: `${name} wrote every log line${suffix}`, target: '0 dropped', value: String(row.droppedLines), result: 'FAIL', fatal: true })
    }
  }
  // In a matrix, a check whose servers were not run is left out of every cell rather than skipped in each.
  if (cells.length > 1) checks = checks.filter((c) => c.result !== 'SKIP')
  const rows = Object.entries(S).map(([name, r]) => [
    name + (r.connections === options.connections ? '' : ` (${r.connections} conn)`),
    fmt(r.rps), fmt(r.p50, 2), fmt(r.p99, 2), fmt(ratio(r.rps, S.peer?.rps), 2), fmt(r.cpuUs), fmt(r.waitUs),
    ...options.traceGc ? [fmt(r.gcPerK, 2), fmt(r.gcMsPerK, 2), fmt(r.gcMaxMs, 1)] : [],
    fmt(r.rssMB), fmt(r.startMs), String(r.errors)
  ])
  // Every round of every server, and the service's ratio to the peer in that round.
  const roundRows = Object.entries(rounds).flatMap(([name, rs]) => rs.map((r) => [
    String(r.round), name, fmt(r.rps), fmt(r.p99, 2), fmt(r.cpuUs), fmt(r.waitUs),
    ...options.traceGc ? [fmt(r.gc?.pausePerK, 2), fmt(r.gc?.maxPauseMs, 1)] : [],
    name in BASIS ? fmt(ratio(r.rps, rounds[BASIS[name]]?.find((o) => o.round === r.round)?.rps), 2) : ''
  ])).sort((a, b) => Number(a[0]) - Number(b[0]))
  return { S, checks, rows, roundRows }
}

const header = ['target', 'req/s', 'p50 ms', 'p99 ms', '× peer', 'CPU µs/req', 'waited µs/req',
  ...options.traceGc ? ['GCs/kreq', 'GC ms/kreq', 'longest GC ms'] : [], 'RSS MB', 'start ms', 'errors']
const roundHeader = ['round', 'target', 'req/s', 'p99 ms', 'CPU µs/req', 'waited µs/req',
  ...options.traceGc ? ['GC ms/kreq', 'longest GC ms'] : [], '× peer, memory or pgbench']
const results = cells.map((cell) => ({ cell, ...summarise(cell) }))
const checks = results.flatMap((r) => r.checks)

const table = (head, rows) => {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)))
  const line = (cs) => cs.map((c, i) => i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])).join('  ')
  return `${line(head)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${rows.map(line).join('\n')}`
}
for (const { cell, rows } of results) console.log(`\n${cells.length > 1 ? `${cell.name}\n` : ''}${table(header, rows)}`)
console.log('')
for (const [name, why] of Object.entries(skipped)) console.log(`skipped ${name}: ${why}`)
for (const c of checks) console.log(`${c.result.padEnd(4)}  ${c.measure}: ${c.value} (target ${c.target})`)
// A main thread that waited for a CPU over half its own CPU time shared it with other work: its p99 and req/s
// then measure the host as much as the server.
const busy = results.flatMap(({ cell, S }) => Object.entries(S)
  .filter(([, r]) => r.waitUs !== null && r.cpuUs > 0 && r.waitUs > r.cpuUs / 2)
  .map(([name, r]) => `${name}${cells.length > 1 ? ` (${cell.name})` : ''} ${fmt(r.waitUs)} against ${fmt(r.cpuUs)}`))
const busyNote = busy.length === 0 ? [] : [`Host busy: µs a request waited for a CPU against µs of CPU, ${busy.join('; ')}.`]
for (const note of busyNote) console.log(`\n${note}`)

const settings = `${tool}, ${options.rounds} rounds × (${options.warmup} s warm-up + ${options.duration} s), ` +
  `${options.starts} starts per server and round, ${options.connections} connections (postgres and pgbench ${options.pgConnections}), ` +
  `NODE_OPTIONS ${options.nodeOptions === null ? 'none' : `\`${options.nodeOptions}\``}${options.traceGc ? ', node --trace-gc' : ''}, ` +
  (cells.length > 1 ? `cells: ${cells.map((c) => c.name).join('; ')} (pinned: servers on CPU 0, load on CPU 1)` : `${cells[0].pin ? 'servers on CPU 0, load on CPU 1' : 'no pinning'}, ${cells[0].ids} ids`)
const mdTable = (head, rows) => [
  `| ${head.join(' | ')} |`,
  `|${head.map((_, i) => i === 0 ? '---' : '---:').join('|')}|`,
  ...rows.map((r) => `| ${r.join(' | ')} |`)
]
const md = [
  `# npm run bench, ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  '',
  `Machine: ${machine.cpu}, ${machine.cores} cores (shared by the server and the load generator), ${machine.memoryGB} GB, ${machine.os}, Node ${machine.node}.`,
  `Settings: ${settings}. Medians over the rounds; every request a valid POST /plants with a new id and a tag.`,
  '',
  ...results.flatMap(({ cell, rows }) => [...cells.length > 1 ? [`## ${cell.name}`, ''] : [], ...mdTable(header, rows), '']),
  ...Object.entries(skipped).map(([name, why]) => `- skipped ${name}: ${why}`),
  ...mdTable(['check', 'target', 'value', 'result'], checks.map((c) => [c.measure, c.target, c.value, c.result])),
  '',
  ...busyNote.flatMap((note) => [note, '']),
  '## Rounds',
  '',
  ...results.flatMap(({ cell, roundRows }) => [...cells.length > 1 ? [`### ${cell.name}`, ''] : [], ...mdTable(roundHeader, roundRows), '']),
  ''
].join('\n')
mkdirSync(RESULTS, { recursive: true })
writeFileSync(args.out, md)
const single = results.length === 1 ? { summary: results[0].S, rounds: cells[0].rounds } : {}
writeFileSync(args.out.replace(/\.md$/, '') + '.json', JSON.stringify({
  date: startedAt.toISOString(),
  machine,
  tool,
  options,
  ...single,
  cells: results.map(({ cell, S, checks }) => ({ ids: cell.ids, pinned: cell.pin, summary: S, rounds: cell.rounds, checks })),
  skipped,
  checks
}, null, 2) + '\n')
console.log(`\nwritten: ${args.out} (and .json)`)
process.exitCode = checks.some((c) => c.fatal) ? 1 : 0
