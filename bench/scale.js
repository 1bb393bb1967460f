// npm run bench:scale: how the cost grows as a store fills. Each store is started empty (or filled
// in bulk first, --prefill) and filled under steady load (wrk, 32 keep-alive connections, random or
// ascending ids) in windows of a few seconds; after each window the server's RSS, the SQLite file and
// the PostgreSQL table and index sizes are read. Per step of plants the report shows throughput,
// p50/p99 (median of the windows' own percentiles, and the worst window's p99), the longest single
// request, CPU per request and memory or disk per plant, with flatness checks against the first step.
//
// Results: a JSON file (--out), a Markdown table and an SVG chart beside it, rewritten after every
// window, so that a run cut off keeps what it measured; a run with the same --out skips the fills
// already complete there. --rebuild recomputes the table and the chart from the file alone.
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { freshDatabase, pgClient, postgresProblem, prefillPostgres } from './postgres.js'
import {
  cpuSeconds, fmt, has, load, machine as describeMachine, median, pinning, positive, RESULTS, serviceEnv,
  SERVERS, startServer, stopServer, vmRssBytes
} from './util.js'

const STORES = ['memory', 'peer', 'sqlite', 'postgres']
const DEFAULT_PLANTS = { memory: 10_000_000, peer: 10_000_000, sqlite: 50_000_000, postgres: 50_000_000 }

const { values: args } = parseArgs({
  options: {
    stores: { type: 'string', default: STORES.join(',') },
    ids: { type: 'string', default: 'random,ascending' },
    plants: { type: 'string' },
    step: { type: 'string' },
    window: { type: 'string' },
    connections: { type: 'string', default: '32' },
    out: { type: 'string' },
    quick: { type: 'boolean', default: false },
    'no-pin': { type: 'boolean', default: false },
    url: { type: 'string' },
    pid: { type: 'string' },
    file: { type: 'string' },
    'pg-url': { type: 'string' },
    stored: { type: 'string' },
    label: { type: 'string', default: 'external' },
    rebuild: { type: 'boolean', default: false },
    prefill: { type: 'string' },
    svg: { type: 'string' },
    minutes: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false }
  }
})
if (args.help) {
  console.log(`npm run bench:scale -- [options]
  --stores a,b      any of ${STORES.join(', ')} (default: all)
  --ids a,b         random, ascending (default: both); random ids are uniform below 2^53
  --plants N        plants per fill (default: memory and peer ${fmt(DEFAULT_PLANTS.memory)}, sqlite and postgres ${fmt(DEFAULT_PLANTS.sqlite)}; --quick 200,000)
  --step N          plants per reported step (default 1,000,000; --quick 50,000)
  --window S        seconds per load window (default 5; --quick 2)
  --connections N   keep-alive connections (default 32)
  --out FILE        the JSON result file to write and to continue (fills complete there are skipped)
  --quick           a few minutes in all
  --no-pin          do not pin the server to CPU 0 and wrk to CPU 1
  --url URL         load a server already running there (e.g. the image) instead of starting one;
                    --label NAME names it in the results, --pid PID reads its RSS, --file PATH its SQLite file,
                    --pg-url URL its PostgreSQL table and index sizes, --stored N the plants it holds already
                    (a store filled in bulk before)
  --minutes M       stop each fill after M minutes of load, whatever its count (its steps and checks are kept)
  --prefill N       sqlite and postgres: add N plants in bulk (random ids) before the fill, which then counts from N
  --rebuild         with --out: recompute the steps, checks, Markdown and chart of that file from its windows
  --svg FILE        the chart (default: beside --out, .svg), e.g. docs/scale.svg
env: BENCH_DATABASE_URL (PostgreSQL server; a fresh database per fill, dropped after)`)
  process.exit(0)
}

const quick = args.quick
const stores = args.url === undefined ? args.stores.split(',').map((s) => s.trim()).filter(Boolean) : [args.label]
const idPatterns = args.ids.split(',').map((s) => s.trim()).filter(Boolean)
for (const s of stores) if (args.url === undefined && !STORES.includes(s)) { console.error(`bench:scale: unknown store ${s}`); process.exit(2) }
for (const p of idPatterns) if (p !== 'random' && p !== 'ascending') { console.error(`bench:scale: unknown id pattern ${p}`); process.exit(2) }
if (!has('wrk', ['--version']) && !args.rebuild) { console.error('bench:scale needs wrk (apt-get install wrk)'); process.exit(2) }
const plantsFor = (store) => Math.round(positive(args.plants, quick ? 200_000 : DEFAULT_PLANTS[store] ?? 10_000_000, 'plants'))
const step = Math.round(positive(args.step, quick ? 50_000 : 1_000_000, 'step'))
const windowS = positive(args.window, quick ? 2 : 5, 'window')
const connections = Math.round(positive(args.connections, 32, 'connections'))
const { pin, pinned } = pinning(!args['no-pin'])
const prefill = args.prefill === undefined ? 0 : Math.round(positive(args.prefill, 0, 'prefill'))

mkdirSync(RESULTS, { recursive: true })
const runTmp = join(RESULTS, `scale-tmp-${process.pid}`)
mkdirSync(runTmp, { recursive: true })
const startedAt = new Date()
const outFile = args.out ?? join(RESULTS, 'scale-latest.json')
const svgFile = args.svg ?? outFile.replace(/\.json$/, '') + '.svg'
const machine = describeMachine()
const result = existsSync(outFile)
  ? JSON.parse(readFileSync(outFile, 'utf8'))
  : { startedAt: startedAt.toISOString(), machine, connections, windowS, step, pinned: pin, fills: [] }

// ---------------------------------------------------------------------------------------------
// Servers

/** What to start for a store: { script, env, service, file?, pgUrl?, cleanup }. */
async function prepare (store, plants, label) {
  if (args.url !== undefined) return { external: true, file: args.file, pgUrl: args['pg-url'] }
  // Room for the fill, within the most MAX_PLANTS takes (it bounds only the memory store).
  const maxPlants = String(Math.min(16_000_000, plants + 1_000_000))
  const script = SERVERS.memory.script
  if (store === 'memory') return { script, service: true, env: serviceEnv({ MAX_PLANTS: maxPlants }) }
  if (store === 'peer') return { script: SERVERS.peer.script, env: SERVERS.peer.env() }
  if (store === 'sqlite') {
    // On the project's disk, so that the fsync of each commit is a real one.
    const file = join(runTmp, `${label}.db`)
    return {
      script,
      service: true,
      file,
      env: serviceEnv({ DATABASE_URL: `sqlite:${file}`, MAX_PLANTS: maxPlants }),
      cleanup: async () => { for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true }) }
    }
  }
  const problem = await postgresProblem()
  if (problem !== undefined) return { skipped: problem }
  const db = await freshDatabase(`scale_${label}`)
  return { script, service: true, pgUrl: db.url, env: serviceEnv({ DATABASE_URL: db.url, MAX_PLANTS: maxPlants }), cleanup: db.drop }
}

const start = (target, label) =>
  startServer(pinned('0', [process.execPath, target.script]), target.env, { logFile: join(runTmp, `${label}.log`), timeoutMs: 20000 })

/** SQLite: N plants with random ids below 2^53 into the service's table (its own start-up made it), 100,000 per transaction. */
async function prefillSqlite (file, plants) {
  const { default: Database } = await import('better-sqlite3')
  const db = new Database(file)
  const insert = db.prepare("INSERT INTO plants (id, name, tag) VALUES (?, 'bench plant', NULL) ON CONFLICT (id) DO NOTHING")
  const batch = db.transaction((n) => {
    for (let i = 0; i < n; i++) insert.run(BigInt(1 + Math.floor(Math.random() * (2 ** 53 - 2))))
  })
  for (let done = 0; done < plants; done += 100_000) batch(Math.min(100_000, plants - done))
  db.pragma('wal_checkpoint(TRUNCATE)')
  const { count } = db.prepare('SELECT count(*) AS count FROM plants').get()
  db.close()
  return count
}

// ---------------------------------------------------------------------------------------------
// One window of load, and what is read after it

let windows = 0
/** One window of wrk; random ids are seeded per window, ascending ones continue from idBase. */
function loadWindow (port, ids, idBase, seconds) {
  windows += 1
  return load({ tool: 'wrk', port, connections, seconds, ids, idBase: ids === 'random' ? process.pid * 1000 + windows : idBase, pinned, timeoutS: 10 })
}

/** Bytes a process has caused to be written to storage so far (/proc/<pid>/io), or null. */
function writtenBytes (pid) {
  try {
    return Number(/^write_bytes: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? Number.NaN)
  } catch {
    return null
  }
}

const fileBytes = (file) => ['', '-wal'].reduce((total, suffix) => {
  try { return total + statSync(`${file}${suffix}`).size } catch { return total }
}, 0)

async function pgSizes (client) {
  const { rows } = await client.query("SELECT pg_relation_size('plants') AS t, pg_indexes_size('plants') AS i, pg_total_relation_size('plants') AS a")
  return { tableBytes: Number(rows[0].t), indexBytes: Number(rows[0].i), totalBytes: Number(rows[0].a) }
}

// ---------------------------------------------------------------------------------------------
// One fill: a store from empty to `plants`, with one id pattern

async function fill (store, ids) {
  const plants = plantsFor(store)
  const label = `${store}-${ids}`
  const target = await prepare(store, plants, `${label}-${process.pid}`)
  if (target.skipped) {
    console.log(`${label}: SKIPPED: ${target.skipped}`)
    return { store, ids, plants, skipped: target.skipped }
  }
  const record = { store, ids, target: plants, step, windowS, connections, machine, startedAt: new Date().toISOString(), windows: [], steps: [], complete: false }
  const existing = result.fills.findIndex((f) => f.store === store && f.ids === ids)
  if (existing >= 0) result.fills[existing] = record
  else result.fills.push(record)
  let server
  let pg
  try {
    let stored = Math.round(Number(args.stored ?? 0))
    if (prefill > 0 && (target.file !== undefined || target.pgUrl !== undefined) && !target.external) {
      // The service creates its table at start; the bulk fill then runs with the server stopped.
      await stopServer((await start(target, label)).child)
      const began = Date.now()
      stored = target.file === undefined ? await prefillPostgres(target.pgUrl, prefill) : await prefillSqlite(target.file, prefill)
      console.log(`${label}: ${fmt(stored)} plants filled in bulk in ${fmt((Date.now() - began) / 1000)} s`)
    }
    if (stored > 0) record.prefilled = stored
    server = target.external
      ? { port: Number(new URL(args.url).port), child: { pid: args.pid === undefined ? null : Number(args.pid) } }
      : await start(target, label)
    if (target.pgUrl) pg = await pgClient(target.pgUrl)
    const rss0 = vmRssBytes(server.child.pid)
    record.emptyRssBytes = rss0
    let idBase = 1_000_000
    // A short warm-up (JIT, first pages): its plants count as stored, its figures are not reported.
    const warm = await loadWindow(server.port, ids, idBase, 1)
    stored += warm.requests
    idBase += warm.requests + 1000
    const t0 = Date.now()
    const deadline = args.minutes === undefined ? Infinity : t0 + positive(args.minutes, 0, 'minutes') * 60000
    // At least one measured window, even when the warm-up alone passed the target (a small --plants on a fast machine).
    while ((stored < plants || record.windows.length === 0) && Date.now() < deadline) {
      const cpu0 = cpuSeconds(server.child.pid)
      const written0 = writtenBytes(server.child.pid)
      const r = await loadWindow(server.port, ids, idBase, windowS)
      const cpu1 = cpuSeconds(server.child.pid)
      const written1 = writtenBytes(server.child.pid)
      const errors = r.non2xx + r.connectErrors + r.readErrors + r.writeErrors + r.timeouts
      stored += r.requests - r.non2xx
      idBase += r.requests + 1000
      const w = {
        plants: stored,
        requests: r.requests,
        seconds: r.durationUs / 1e6,
        rps: r.requests / (r.durationUs / 1e6),
        p50: r.p50Us / 1000,
        p99: r.p99Us / 1000,
        // No request answered in the whole window: the server stalled at least that long (wrk counts
        // only answered requests, so its own max would read 0).
        max: r.requests === 0 ? r.durationUs / 1000 : r.maxUs / 1000,
        stalled: r.requests === 0,
        errors,
        cpuUsPerReq: cpu0 === null || cpu1 === null ? null : (cpu1 - cpu0) * 1e6 / r.requests,
        // What the server wrote to storage per request (the SQLite WAL and checkpoints; its log goes to a file too).
        writtenBytesPerReq: written0 === null || written1 === null ? null : (written1 - written0) / r.requests,
        rssBytes: vmRssBytes(server.child.pid)
      }
      if (target.file) w.fileBytes = fileBytes(target.file)
      if (pg) Object.assign(w, await pgSizes(pg))
      record.windows.push(w)
      record.steps = steps(record.windows, rss0, step, plants)
      record.elapsedS = (Date.now() - t0) / 1000
      save()
      console.log(`${label} ${fmt(stored).padStart(11)} plants  ${fmt(w.rps).padStart(7)} req/s  p50 ${fmt(w.p50, 2)}  p99 ${fmt(w.p99, 2)}  max ${fmt(w.max, 1)} ms` +
        (w.rssBytes === null ? '' : `  rss ${fmt(w.rssBytes / 2 ** 20)} MB`) + (w.fileBytes ? `  file ${fmt(w.fileBytes / 2 ** 20)} MB` : '') +
        (w.totalBytes ? `  table+index ${fmt(w.totalBytes / 2 ** 20)} MB` : '') + (errors > 0 ? `  !! ${errors} errors` : ''))
      if (errors > 0 && r.requests === r.non2xx) throw new Error('every request of a window failed')
    }
    record.complete = stored >= plants
    if (!record.complete) record.stopped = `after --minutes ${args.minutes}`
    record.checks = flatness(record.steps)
    save()
    return record
  } catch (error) {
    record.error = error.message
    save()
    console.log(`${label}: FAILED: ${error.message}`)
    return record
  } finally {
    await pg?.end().catch(() => {})
    if (server && !target.external) await stopServer(server.child)
    await target.cleanup?.().catch(() => {})
  }
}

/** Windows grouped by the step their last plant falls in: one row per step of `step` plants. */
function steps (ws, rss0, size = step, target = Infinity) {
  const groups = new Map()
  // A window marked `excluded` (with the reason, by hand: e.g. a tracer attached to the server) is kept in the
  // file but counts nowhere.
  for (const w of ws.filter((x) => x.excluded === undefined)) {
    // The window that passes the target counts in the last step, not in a step of its own.
    const k = Math.min(Math.ceil(w.plants / size), Math.ceil(target / size))
    if (!groups.has(k)) groups.set(k, [])
    groups.get(k).push(w)
  }
  return [...groups.values()].map((g) => {
    const last = g[g.length - 1]
    const requests = g.reduce((a, w) => a + w.requests, 0)
    const seconds = g.reduce((a, w) => a + w.seconds, 0)
    const answered = g.filter((w) => !w.stalled)
    return {
      plants: last.plants,
      windows: g.length,
      rps: requests / seconds,
      p50: median(answered.map((w) => w.p50)),
      p99: median(answered.map((w) => w.p99)),
      p99Worst: Math.max(...answered.map((w) => w.p99)),
      stalledWindows: g.length - answered.length,
      max: Math.max(...g.map((w) => w.max)),
      errors: g.reduce((a, w) => a + w.errors, 0),
      cpuUsPerReq: median(g.map((w) => w.cpuUsPerReq)),
      writtenBytesPerReq: median(g.map((w) => w.writtenBytesPerReq)),
      rssBytes: last.rssBytes,
      rssBytesPerPlant: rss0 === null || last.rssBytes === null ? null : (last.rssBytes - rss0) / last.plants,
      ...(last.fileBytes === undefined ? {} : { fileBytes: last.fileBytes, fileBytesPerPlant: last.fileBytes / last.plants }),
      ...(last.totalBytes === undefined
        ? {}
        : { tableBytes: last.tableBytes, indexBytes: last.indexBytes, totalBytes: last.totalBytes, totalBytesPerPlant: last.totalBytes / last.plants })
    }
  })
}

/** Flat as it fills: each step against the first (the empty store), and no request over 100 ms. */
function flatness (ss) {
  if (ss.length === 0) return []
  const first = ss[0]
  const minRps = Math.min(...ss.map((s) => s.rps))
  const maxP99 = Math.max(...ss.map((s) => s.p99))
  const longest = Math.max(...ss.map((s) => s.max))
  return [
    { measure: 'lowest step throughput vs the first step', target: '≥ 0.8×', value: minRps / first.rps, pass: minRps / first.rps >= 0.8 },
    { measure: 'highest step p99 vs the first step', target: '≤ 2×', value: maxP99 / first.p99, pass: maxP99 / first.p99 <= 2 },
    { measure: 'longest single request (ms)', target: '≤ 100 ms', value: longest, pass: longest <= 100 }
  ]
}

// ---------------------------------------------------------------------------------------------
// Files

function markdown () {
  const lines = [`# bench:scale, ${result.startedAt}`, '',
    `machine: ${result.machine.cpu}, ${result.machine.cores} cores, ${result.machine.memoryGB} GB, ${result.machine.os}, node ${result.machine.node}; ` +
    `wrk, ${result.connections} keep-alive connections, ${result.windowS} s windows${result.pinned ? ', server on CPU 0, wrk on CPU 1' : ''}`, '']
  for (const f of result.fills) {
    lines.push(`## ${f.store}, ${f.ids} ids, to ${fmt(f.target)} plants${f.complete ? '' : f.skipped ? ` (skipped: ${f.skipped})` : ` (stopped at ${fmt(f.windows?.at(-1)?.plants ?? 0)}${f.error ?? f.stopped ? `: ${f.error ?? f.stopped}` : ''})`}`, '')
    if (!f.steps?.length) continue
    lines.push('| plants | req/s | p50 ms | p99 ms | worst window p99 ms | longest request ms | CPU µs/req | written bytes/req | RSS MB | RSS bytes/plant | file or table+index MB | bytes/plant on disk | errors |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for (const s of f.steps) {
      const disk = s.fileBytes ?? s.totalBytes
      const diskPer = s.fileBytesPerPlant ?? s.totalBytesPerPlant
      lines.push(`| ${fmt(s.plants)} | ${fmt(s.rps)} | ${fmt(s.p50, 2)} | ${fmt(s.p99, 2)} | ${fmt(s.p99Worst, 2)} | ${fmt(s.max, 1)} | ${fmt(s.cpuUsPerReq)} | ${fmt(s.writtenBytesPerReq)} | ${s.rssBytes === null ? '–' : fmt(s.rssBytes / 2 ** 20)} | ${fmt(s.rssBytesPerPlant)} | ${disk === undefined ? '–' : fmt(disk / 2 ** 20)}${s.indexBytes === undefined ? '' : ` (index ${fmt(s.indexBytes / 2 ** 20)})`} | ${diskPer === undefined ? '–' : fmt(diskPer)} | ${s.errors} |`)
    }
    lines.push('')
    for (const c of f.checks ?? []) lines.push(`- ${c.pass ? 'PASS' : 'FAIL'} ${c.measure}: ${fmt(c.value, 2)} (target ${c.target})`)
    if (f.checks) lines.push('')
  }
  return lines.join('\n')
}

function save () {
  writeFileSync(outFile, JSON.stringify(result, null, 1))
  const md = markdown()
  writeFileSync(outFile.replace(/\.json$/, '') + '.md', md)
}

/**
 * The chart: throughput, p99, the longest single request and CPU per request against plants
 * stored, one line per store and id pattern; Vega-Lite rendered to SVG in Node (no browser).
 */
async function chart () {
  const metrics = [
    { key: 'rps', title: 'throughput (req/s)' },
    { key: 'p99', title: 'p99 latency (ms, median of the windows)', log: true },
    { key: 'max', title: 'longest single request (ms)', log: true, rule: 100 },
    { key: 'cpuUsPerReq', title: 'server CPU per request (µs)' }
  ]
  const rows = result.fills.flatMap((f) => (f.steps ?? []).map((s) => ({
    series: `${f.store}, ${f.ids} ids`,
    plants: s.plants / 1e6,
    ...Object.fromEntries(metrics.map(({ key }) => [key, s[key]]))
  })))
  if (rows.length === 0) return
  const panel = ({ key, title, log, rule }, last) => ({
    width: 640,
    height: 170,
    layer: [
      {
        mark: { type: 'line', point: { size: 18 } },
        encoding: {
          x: { field: 'plants', type: 'quantitative', title: last ? 'plants stored (millions)' : null },
          y: { field: key, type: 'quantitative', title, scale: log ? { type: 'log' } : { zero: true } },
          color: { field: 'series', type: 'nominal', title: 'store, ids' }
        }
      },
      ...(rule === undefined ? [] : [{ mark: { type: 'rule', strokeDash: [4, 4], color: 'gray' }, encoding: { y: { datum: rule } } }])
    ]
  })
  const m = result.machine
  const spec = {
    title: { text: 'Plant Store: the cost as a store fills (npm run bench:scale)', subtitle: `${result.startedAt.slice(0, 10)}, ${m.cpu}, ${m.cores} cores, Node ${m.node}` },
    data: { values: rows },
    vconcat: metrics.map((metric, i) => panel(metric, i === metrics.length - 1)),
    config: { background: 'white', axisY: { titleFontSize: 10 }, legend: { labelLimit: 320 } }
  }
  const [vega, { compile }] = await Promise.all([import('vega'), import('vega-lite')])
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' })
  writeFileSync(svgFile, await view.toSVG())
}

// ---------------------------------------------------------------------------------------------
// The run

if (args.rebuild) {
  for (const f of result.fills) {
    if (!f.windows) continue
    for (const w of f.windows) {
      if (w.requests === 0) Object.assign(w, { max: w.seconds * 1000, stalled: true })
    }
    f.steps = steps(f.windows, f.emptyRssBytes ?? null, f.step ?? result.step, f.target)
    if (f.steps.length > 0) f.checks = flatness(f.steps)
  }
  save()
  await chart()
  rmSync(runTmp, { recursive: true, force: true })
  console.log(`rebuilt ${outFile} (and .md), ${svgFile}`)
  process.exit(0)
}

console.log(`bench:scale ${startedAt.toISOString()}; ${machine.cpu}, ${machine.cores} cores, node ${machine.node}`)
console.log(`stores ${stores.join(', ')}; ids ${idPatterns.join(', ')}; ${connections} connections; ${windowS} s windows; steps of ${fmt(step)}; results ${outFile}`)
let failed = false
try {
  for (const ids of idPatterns) {
    for (const store of stores) {
      const done = result.fills.find((f) => f.store === store && f.ids === ids && f.complete && f.target === plantsFor(store))
      if (done) { console.log(`${store}-${ids}: complete in ${outFile}, skipped`); continue }
      const record = await fill(store, ids)
      if (record.error || record.windows?.some((w) => w.errors > 0)) failed = true
      for (const c of record.checks ?? []) console.log(`  ${c.pass ? 'PASS' : 'FAIL'} ${store} ${ids}: ${c.measure}: ${fmt(c.value, 2)} (target ${c.target})`)
    }
  }
} finally {
  rmSync(runTmp, { recursive: true, force: true })
}
save()
await chart()
console.log(`written: ${outFile} (and .md), ${svgFile}`)
process.exitCode = failed ? 1 : 0
