// npm run bench: Plant Store measured against its baselines, side by side, in one interleaved run.
// See bench/README.md for what each target means and how to read the table.
import { spawn, spawnSync } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { createServer } from 'node:net'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const BENCH = dirname(fileURLToPath(import.meta.url))
const ROOT = dirname(BENCH)
const RESULTS = join(BENCH, 'results')
const TOKEN = 'bench-token-0123456789abcdef'
const ALL_TARGETS = ['baseline-raw', 'baseline-fastify', 'memory', 'sqlite', 'postgres', 'pgbench', 'plant-memory']
// Opt-in: what each feature costs (bench/feature-ladder.js), never part of the default run.
const LADDER_TARGETS = ['ladder-1', 'ladder-2', 'ladder-3', 'ladder-4', 'ladder-5', 'ladder-6', 'ladder-7']
const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test'

// ---------------------------------------------------------------------------------------------
// Options

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string' },
    warmup: { type: 'string' },
    rounds: { type: 'string' },
    connections: { type: 'string' },
    'pg-connections': { type: 'string' },
    targets: { type: 'string' },
    quick: { type: 'boolean', default: false },
    tool: { type: 'string' },
    threads: { type: 'string' },
    'no-pin': { type: 'boolean', default: false },
    'server-cpus': { type: 'string', default: '0' },
    'load-cpus': { type: 'string', default: '1' },
    plants: { type: 'string' },
    'cpu-prof': { type: 'boolean', default: false },
    'start-timeout': { type: 'string', default: '10' },
    starts: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false }
  }
})

if (args.help) {
  console.log(`npm run bench -- [options]
  --duration S         measured seconds per target and round (default 10; --quick 3)
  --warmup S           warm-up seconds before each measured window (default 3; --quick 1)
  --rounds N           interleaved rounds; the table shows medians (default 3; --quick 2)
  --connections N      concurrent connections for the HTTP targets (default 50)
  --pg-connections N   connections for the postgres target and pgbench (default 16)
  --targets a,b        any of ${ALL_TARGETS.join(', ')} (default: all);
                       also ${LADDER_TARGETS.join(', ')} (bench/feature-ladder.js, opt-in)
  --quick              short run for development (about a minute)
  --tool wrk|autocannon  load generator (default: wrk when installed)
  --threads N          wrk threads (default 1 when pinned, 2 otherwise)
  --no-pin             do not pin the server and the load generator to separate CPUs
  --server-cpus L --load-cpus L   taskset CPU lists (default 0 and 1)
  --plants N           plants for the memory-per-plant measure (default 1000000)
  --cpu-prof           run the service targets with node --cpu-prof (profiles in bench/results/profiles)
  --starts N           starts per target and round for the start time, the last one loaded (default 3; --quick 2)
  --start-timeout S    a target not answering within S seconds is skipped (default 10)
env: BENCH_DATABASE_URL (default ${DEFAULT_PG_URL})`)
  process.exit(0)
}

const quick = args.quick
const num = (value, fallback, name) => {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`bench: --${name} must be a positive number, got ${value}`)
    process.exit(2)
  }
  return n
}
const options = {
  duration: num(args.duration, quick ? 3 : 10, 'duration'),
  warmup: num(args.warmup, quick ? 1 : 3, 'warmup'),
  rounds: Math.round(num(args.rounds, quick ? 2 : 3, 'rounds')),
  connections: Math.round(num(args.connections, 50, 'connections')),
  pgConnections: Math.round(num(args['pg-connections'], 16, 'pg-connections')),
  plants: Math.round(num(args.plants, 1_000_000, 'plants')),
  starts: Math.round(num(args.starts, quick ? 2 : 3, 'starts')),
  startTimeoutMs: num(args['start-timeout'], 10, 'start-timeout') * 1000,
  targets: args.targets === undefined ? ALL_TARGETS : args.targets.split(',').map((t) => t.trim()).filter(Boolean)
}
for (const target of options.targets) {
  if (!ALL_TARGETS.includes(target) && !LADDER_TARGETS.includes(target)) {
    console.error(`bench: unknown target "${target}"; targets: ${[...ALL_TARGETS, ...LADDER_TARGETS].join(', ')}`)
    process.exit(2)
  }
}

const has = (command, argv) => {
  const result = spawnSync(command, argv, { stdio: 'ignore' })
  return result.error === undefined && result.status !== null
}
const tool = args.tool ?? (has('wrk', ['--version']) ? 'wrk' : 'autocannon')
if (tool !== 'wrk' && tool !== 'autocannon') {
  console.error('bench: --tool must be wrk or autocannon')
  process.exit(2)
}
const pin = !args['no-pin'] && os.cpus().length >= 2 && has('taskset', ['-c', '0', 'true'])
const threads = Math.round(num(args.threads, pin ? 1 : 2, 'threads'))
const serverCpus = args['server-cpus']
const loadCpus = args['load-cpus']
const pgUrl = process.env.BENCH_DATABASE_URL ?? DEFAULT_PG_URL
const devNull = openSync('/dev/null', 'w')
const runTmp = join(RESULTS, `tmp-${process.pid}`)
const profileDir = join(RESULTS, 'profiles')
mkdirSync(runTmp, { recursive: true })

// ---------------------------------------------------------------------------------------------
// Small helpers

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const median = (values) => {
  const sorted = values.filter((v) => typeof v === 'number' && Number.isFinite(v)).sort((a, b) => a - b)
  if (sorted.length === 0) return null
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
const sum = (values) => values.reduce((a, b) => a + (b ?? 0), 0)
const percentile = (sorted, p) => sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p / 100))]

/** Runs argv with the CPUs pinned (when pinning), as `taskset -c LIST argv...`: taskset execs, so the pid is the program's. */
const pinned = (cpus, argv) => pin ? ['taskset', ['-c', cpus, ...argv]] : [argv[0], argv.slice(1)]

function freePort () {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** One HTTP request to 127.0.0.1; resolves { status, body } or rejects with the socket error. */
function call (port, method, path, body, timeoutMs = 2000) {
  return new Promise((resolve, reject) => {
    const headers = body === undefined ? {} : { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, 'content-length': Buffer.byteLength(body) }
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent: false, timeout: timeoutMs }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode, body: text }))
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end(body)
  })
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100

/** CPU time (user + system) used so far by a process, in seconds; null off Linux. */
function cpuSeconds (pid) {
  try {
    // The fields after the command name, which is in parentheses and may contain spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
  } catch {
    return null
  }
}

function vmRssBytes (pid) {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match === null ? null : Number(match[1]) * 1024
  } catch {
    return null
  }
}

/** Runs a command to completion with a time bound; resolves { status, stdout, stderr }. */
function run (command, argv, { env = process.env, timeoutMs, cwd = ROOT } = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, argv, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk) => { stdout += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr = (stderr + chunk).slice(-20000) })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', (error) => { clearTimeout(timer); resolve({ status: null, stdout, stderr: stderr + String(error) }) })
    child.on('close', (status) => { clearTimeout(timer); resolve({ status, stdout, stderr }) })
  })
}

const resultLine = (stdout) => {
  const line = stdout.split('\n').find((l) => l.startsWith('BENCH_RESULT '))
  return line === undefined ? null : JSON.parse(line.slice('BENCH_RESULT '.length))
}

// ---------------------------------------------------------------------------------------------
// Load

let loadRuns = 0

/** Puts the standard load on 127.0.0.1:port for `seconds`; returns req/s, latency (ms) and errors. */
async function load (port, connections, seconds) {
  loadRuns += 1
  // Unique ids across every load run of this process: see bench/unique-ids.lua.
  const env = { ...process.env, BENCH_TOKEN: TOKEN, BENCH_ID_BASE: String(2 ** 32 * loadRuns) }
  const url = `http://127.0.0.1:${port}/plants`
  const argv = tool === 'wrk'
    ? ['wrk', `-t${Math.min(threads, connections)}`, `-c${connections}`, `-d${seconds}s`, '--timeout', '5s', '-s', join(BENCH, 'unique-ids.lua'), url]
    : [process.execPath, join(BENCH, 'autocannon-load.js'), url, String(connections), String(seconds)]
  const [command, rest] = pinned(loadCpus, argv)
  const { status, stdout, stderr } = await run(command, rest, { env, timeoutMs: (seconds + 30) * 1000 })
  const r = resultLine(stdout)
  if (r === null) throw new Error(`${tool} failed (status ${status}): ${stderr.trim().split('\n').slice(-3).join(' | ')}`)
  const seconds_ = r.durationUs / 1e6
  return {
    rps: r.requests / seconds_,
    requests: r.requests,
    p50: r.p50Us / 1000,
    p99: r.p99Us / 1000,
    max: r.maxUs / 1000,
    non2xx: r.non2xx,
    socketErrors: r.connectErrors + r.readErrors + r.writeErrors + r.timeouts
  }
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL: a fresh database per round, for the postgres target and pgbench alike

let pgModule
async function pgClient (url) {
  pgModule ??= (await import('pg')).default
  const client = new pgModule.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  client.on('error', () => {})
  await client.connect()
  return client
}

/** A fresh database on the server of BENCH_DATABASE_URL; falls back to that database itself. */
async function freshDatabase (label) {
  const name = `plant_bench_${process.pid}_${label}`.replace(/[^a-z0-9_]/g, '_')
  const admin = await pgClient(pgUrl)
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } catch (error) {
    await admin.end()
    return { url: pgUrl, note: `cannot create a database (${error.message}); used ${new URL(pgUrl).pathname.slice(1)} as it is`, drop: async () => {} }
  }
  await admin.end()
  const url = new URL(pgUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      const c = await pgClient(pgUrl)
      try { await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) } finally { await c.end() }
    }
  }
}

let pgAvailable
async function postgresAvailable () {
  if (pgAvailable === undefined) {
    try {
      const c = await pgClient(pgUrl)
      await c.query('SELECT 1')
      await c.end()
      pgAvailable = { ok: true }
    } catch (error) {
      pgAvailable = { ok: false, note: `PostgreSQL at ${redact(pgUrl)} is not reachable (${error.message}); set BENCH_DATABASE_URL` }
    }
  }
  return pgAvailable
}
const redact = (url) => { try { const u = new URL(url); if (u.password) u.password = '***'; return u.toString() } catch { return url } }

/** pgbench's single-row insert, at the postgres target's concurrency: the ceiling for that store. */
async function measurePgbench (round) {
  const available = await postgresAvailable()
  if (!available.ok) return { skipped: available.note }
  if (!has('pgbench', ['--version'])) return { skipped: 'pgbench is not installed (Debian package postgresql-client)' }
  const db = await freshDatabase(`pgbench_${round}`)
  try {
    const c = await pgClient(db.url)
    await c.query('DROP TABLE IF EXISTS plant_bench_pgbench')
    await c.query('CREATE TABLE plant_bench_pgbench (id bigint PRIMARY KEY, name text NOT NULL, tag text)')
    await c.end()
    const script = join(runTmp, 'pgbench-insert.sql')
    writeFileSync(script, "\\set id random(1, 9000000000000000000)\nINSERT INTO plant_bench_pgbench (id, name) VALUES (:id, 'bench plant') ON CONFLICT DO NOTHING;\n")
    const clients = options.pgConnections
    const common = ['-n', '-c', String(clients), '-j', String(Math.min(threads, clients)), '-f', script]
    const pgbench = async (seconds, logPrefix) => {
      const argv = ['pgbench', ...common, '-T', String(seconds), ...(logPrefix ? ['-l', `--log-prefix=${logPrefix}`] : []), db.url]
      const [command, rest] = pinned(loadCpus, argv)
      return run(command, rest, { timeoutMs: (seconds + 30) * 1000, cwd: runTmp })
    }
    await pgbench(options.warmup)
    const prefix = join(runTmp, `pgbench-${round}`)
    const { status, stdout, stderr } = await pgbench(options.duration, prefix)
    const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)
    if (status !== 0 || tps === null) return { skipped: `pgbench failed: ${(stderr || stdout).trim().split('\n').slice(-2).join(' | ')}` }
    const failed = /number of failed transactions: (\d+)/.exec(stdout)
    const latencies = []
    for (const file of readdirSync(runTmp).filter((f) => f.startsWith(`pgbench-${round}.`))) {
      for (const line of readFileSync(join(runTmp, file), 'utf8').split('\n')) {
        const fields = line.split(' ')
        if (fields.length >= 3) latencies.push(Number(fields[2]) / 1000)
      }
      rmSync(join(runTmp, file))
    }
    latencies.sort((a, b) => a - b)
    return { rps: Number(tps[1]), p50: percentile(latencies, 50), p99: percentile(latencies, 99), non2xx: failed === null ? 0 : Number(failed[1]), socketErrors: 0, connections: clients }
  } finally {
    await db.drop().catch(() => {})
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP targets: each started fresh, as a child process, on its own port

const serviceEnv = (extra) => {
  // The service's own settings come from the bench only, never from the caller's shell.
  const own = new Set(['PORT', 'HOST', 'LOG_LEVEL', 'API_TOKENS', 'API_TOKENS_FILE', 'DATABASE_URL', 'BODY_LIMIT', 'MAX_PLANTS', 'NODE_OPTIONS', 'METRICS_PORT', 'METRICS_HOST', 'OTEL_EXPORTER_OTLP_ENDPOINT'])
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !own.has(name)))
  // Metrics on, as the Docker image runs (METRICS_PORT=9464); a free port, nothing scrapes it. No OTLP export.
  return { ...env, API_TOKENS: TOKEN, LOG_LEVEL: 'info', MAX_PLANTS: '16000000', METRICS_PORT: '0', ...extra }
}
const nodeFlags = () => args['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []

const httpTargets = {
  'baseline-raw': { script: join(BENCH, 'baseline-raw.js'), env: () => ({}) },
  'baseline-fastify': { script: join(BENCH, 'baseline-fastify.js'), env: () => ({}) },
  memory: { script: join(ROOT, 'dist', 'server.js'), service: true, env: async () => ({ env: serviceEnv({}) }) },
  ...Object.fromEntries(LADDER_TARGETS.map((name) => [name, {
    script: join(BENCH, 'feature-ladder.js'),
    env: () => ({ STEP: name.slice('ladder-'.length), API_TOKENS: TOKEN })
  }])),
  sqlite: {
    script: join(ROOT, 'dist', 'server.js'),
    service: true,
    // On the project's disk (not a tmpfs), so that the fsync before each 200 is a real one.
    env: async (round) => ({ env: serviceEnv({ DATABASE_URL: `sqlite:${join(runTmp, `bench-${round}.db`)}` }) })
  },
  postgres: {
    script: join(ROOT, 'dist', 'server.js'),
    service: true,
    pg: true,
    env: async (round) => {
      const available = await postgresAvailable()
      if (!available.ok) return { skipped: available.note }
      const db = await freshDatabase(`service_${round}`)
      return { env: serviceEnv({ DATABASE_URL: db.url }), cleanup: db.drop, note: db.note }
    }
  }
}

async function stop (child) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 10000)
  await exited
  clearTimeout(timer)
}

/**
 * Starts a target as users start it and waits for its first answered POST /plants (2xx), polling
 * every millisecond. Resolves { child, startMs } or { skipped } (the child is then stopped).
 */
async function startServer (target, env) {
  const [command, rest] = pinned(serverCpus, [process.execPath, ...(target.service ? nodeFlags() : []), target.script])
  let stderr = ''
  const started = process.hrtime.bigint()
  // stdout (the access log) goes to /dev/null through a file descriptor: a real sink, never a full pipe.
  const child = spawn(command, rest, { env, cwd: ROOT, stdio: ['ignore', devNull, 'pipe'] })
  child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr = (stderr + chunk).slice(-4000) })
  let exited = false
  child.once('exit', () => { exited = true })
  child.once('error', (error) => { exited = true; stderr += String(error) })
  const probe = JSON.stringify({ id: 1, name: 'start probe' })
  const deadline = Date.now() + options.startTimeoutMs
  let last = ''
  while (!exited && Date.now() < deadline) {
    try {
      const res = await call(Number(env.PORT), 'POST', '/plants', probe, 1000)
      if (res.status >= 200 && res.status < 300) return { child, startMs: Number(process.hrtime.bigint() - started) / 1e6 }
      last = `answered ${res.status} ${res.body.slice(0, 200)}`
      await sleep(20)
    } catch (error) {
      last = error.code ?? error.message
      await sleep(1)
    }
  }
  await sleep(50)
  await stop(child)
  const why = exited ? `exited at start: ${stderr.trim().split('\n').slice(-1)[0] ?? ''}` : `no 2xx within ${options.startTimeoutMs} ms (last: ${last})`
  return { skipped: `the service ${why}` }
}

/** One round of one HTTP target: start (several times, for the start time), warm-up, measured window, RSS, stop. */
async function measureHttp (name, round) {
  const target = httpTargets[name]
  const prepared = target.service ? await target.env(round) : { env: { ...process.env, ...target.env(), PORT: '', HOST: '127.0.0.1' } }
  if (prepared.skipped) return { skipped: prepared.skipped }
  const env = { ...prepared.env, HOST: '127.0.0.1' }
  const connections = target.pg ? options.pgConnections : options.connections
  let child
  let port
  try {
    // Start time is short and noisy: sample it several times; the last start is the one measured under load.
    const starts = []
    for (let i = 0; i < options.starts; i++) {
      port = await freePort()
      const started = await startServer(target, { ...env, PORT: String(port) })
      if (started.skipped !== undefined) return { skipped: started.skipped }
      starts.push(started.startMs)
      if (i < options.starts - 1) await stop(started.child)
      else child = started.child
    }
    if (target.service) {
      const ready = await call(port, 'GET', '/readyz')
      if (ready.status !== 200) return { skipped: `/readyz answered ${ready.status} ${ready.body.slice(0, 200)}` }
    }
    const warm = await load(port, connections, options.warmup)
    const cpuBefore = cpuSeconds(child.pid)
    const measured = await load(port, connections, options.duration)
    const cpuAfter = cpuSeconds(child.pid)
    const rss = vmRssBytes(child.pid)
    // The server's CPU time per answered request: much steadier than req/s on a shared machine.
    const cpuUs = cpuBefore === null || cpuAfter === null ? null : (cpuAfter - cpuBefore) * 1e6 / measured.requests
    return { ...measured, startMs: median(starts), starts, rss, cpuUs, connections, warmupNon2xx: warm.non2xx + warm.socketErrors, note: prepared.note }
  } finally {
    if (child !== undefined) await stop(child)
    await prepared.cleanup?.().catch(() => {})
    if (name === 'sqlite') for (const suffix of ['', '-wal', '-shm']) rmSync(join(runTmp, `bench-${round}.db${suffix}`), { force: true })
  }
}

async function measurePlantMemory () {
  const { status, stdout, stderr } = await run(process.execPath, ['--expose-gc', join(BENCH, 'memory-per-plant.js'), String(options.plants)], { timeoutMs: 300000 })
  const r = resultLine(stdout)
  if (r === null) return { skipped: `memory-per-plant failed (status ${status}): ${stderr.trim().split('\n').slice(-2).join(' | ')}` }
  return r
}

// ---------------------------------------------------------------------------------------------
// The run

const machine = {
  cpu: os.cpus()[0]?.model ?? 'unknown',
  cores: os.cpus().length,
  memoryGB: Math.round(os.totalmem() / 2 ** 30),
  os: `${os.type()} ${os.release()}`,
  node: process.version
}
const startedAt = new Date()
const loadTargets = options.targets.filter((t) => t !== 'plant-memory')
console.log(`Plant Store benchmark, ${startedAt.toISOString()}`)
console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGB} GB, ${machine.os}, node ${machine.node}`)
console.log(`load generator: ${tool}${tool === 'autocannon' ? ' (wrk is not installed: apt-get install wrk; autocannon saturates itself near 50k req/s on 2 cores)' : ''}` +
  `; ${pin ? `server pinned to CPU ${serverCpus}, load generator to CPU ${loadCpus} (taskset)` : 'no CPU pinning'}`)
console.log(`rounds ${options.rounds} × (warm-up ${options.warmup} s + ${options.duration} s); ${options.connections} connections (postgres and pgbench: ${options.pgConnections})`)
console.log(`targets: ${options.targets.join(', ')}\n`)

const rounds = Object.fromEntries(options.targets.map((t) => [t, []]))
const skipped = {}
const notes = []
const fmt = (n, digits = 0) => n === null || n === undefined ? '–' : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

try {
  for (let round = 1; round <= options.rounds; round++) {
    for (const name of loadTargets) {
      if (skipped[name] !== undefined) continue
      let result
      try {
        result = name === 'pgbench' ? await measurePgbench(round) : await measureHttp(name, round)
      } catch (error) {
        result = { skipped: `failed: ${error.message}` }
      }
      if (result.skipped !== undefined) {
        skipped[name] = result.skipped
        console.log(`round ${round}/${options.rounds} ${name.padEnd(16)} SKIPPED: ${result.skipped}`)
        continue
      }
      if (result.note) notes.push(`${name}: ${result.note}`)
      rounds[name].push(result)
      const errors = result.non2xx + result.socketErrors + (result.warmupNon2xx ?? 0)
      console.log(`round ${round}/${options.rounds} ${name.padEnd(16)} ${fmt(result.rps).padStart(8)} req/s  p50 ${fmt(result.p50, 2)} ms  p99 ${fmt(result.p99, 2)} ms` +
        (result.startMs === undefined ? '' : `  cpu ${fmt(result.cpuUs)} µs/req  start ${fmt(result.startMs)} ms  rss ${fmt(result.rss / 2 ** 20, 1)} MB`) +
        (errors > 0 ? `  !! ${errors} non-2xx or socket errors` : ''))
    }
  }
  if (options.targets.includes('plant-memory')) {
    const r = await measurePlantMemory()
    if (r.skipped !== undefined) skipped['plant-memory'] = r.skipped
    else rounds['plant-memory'].push(r)
    console.log(r.skipped !== undefined
      ? `plant-memory SKIPPED: ${r.skipped}`
      : `plant-memory: ${fmt(r.plants)} plants, ${r.heapBytesPerPlant} heap bytes per plant, of which ${r.stringBytesPerPlant} the name string: ${r.beyondStringsBytesPerPlant} bytes beyond the strings`)
  }
} finally {
  closeSync(devNull)
  rmSync(runTmp, { recursive: true, force: true })
}

// ---------------------------------------------------------------------------------------------
// Table and checks

const summary = {}
for (const name of loadTargets) {
  const rs = rounds[name]
  if (rs.length === 0) continue
  summary[name] = {
    rps: median(rs.map((r) => r.rps)),
    p50: median(rs.map((r) => r.p50)),
    p99: median(rs.map((r) => r.p99)),
    cpuUs: median(rs.map((r) => r.cpuUs)),
    rssMB: median(rs.map((r) => r.rss === undefined || r.rss === null ? null : r.rss / 2 ** 20)),
    startMs: median(rs.map((r) => r.startMs)),
    non2xx: sum(rs.map((r) => r.non2xx + (r.warmupNon2xx ?? 0))),
    socketErrors: sum(rs.map((r) => r.socketErrors)),
    connections: rs[0].connections,
    rounds: rs.length
  }
}
const ratio = (a, b) => a === undefined || b === undefined || !b ? null : a / b
for (const row of Object.values(summary)) {
  row.xFastify = ratio(row.rps, summary['baseline-fastify']?.rps)
  row.xRaw = ratio(row.rps, summary['baseline-raw']?.rps)
}
const plantMemory = rounds['plant-memory']?.[0]

const checks = []
const check = (measure, target, value, ok, shown) => checks.push({ measure, target, value: shown, result: value === null || value === undefined ? 'SKIP' : ok ? 'PASS' : 'FAIL' })
const S = summary
check('memory store req/s vs baseline-fastify', '≥ 0.70×', ratio(S.memory?.rps, S['baseline-fastify']?.rps), ratio(S.memory?.rps, S['baseline-fastify']?.rps) >= 0.70, `${fmt(ratio(S.memory?.rps, S['baseline-fastify']?.rps), 2)}×`)
check('memory store p99 vs baseline-fastify p99', '≤ 2×', ratio(S.memory?.p99, S['baseline-fastify']?.p99), ratio(S.memory?.p99, S['baseline-fastify']?.p99) <= 2, `${fmt(ratio(S.memory?.p99, S['baseline-fastify']?.p99), 2)}×`)
check('sqlite store req/s vs memory store', '≥ 0.50×', ratio(S.sqlite?.rps, S.memory?.rps), ratio(S.sqlite?.rps, S.memory?.rps) >= 0.50, `${fmt(ratio(S.sqlite?.rps, S.memory?.rps), 2)}×`)
check(`postgres store req/s vs pgbench (${options.pgConnections} connections)`, '≥ 0.80×', ratio(S.postgres?.rps, S.pgbench?.rps), ratio(S.postgres?.rps, S.pgbench?.rps) >= 0.80, `${fmt(ratio(S.postgres?.rps, S.pgbench?.rps), 2)}×`)
check('start to first answer vs baseline-fastify', '≤ 1.5×', ratio(S.memory?.startMs, S['baseline-fastify']?.startMs), ratio(S.memory?.startMs, S['baseline-fastify']?.startMs) <= 1.5, `${fmt(ratio(S.memory?.startMs, S['baseline-fastify']?.startMs), 2)}× (${fmt(S.memory?.startMs)} ms vs ${fmt(S['baseline-fastify']?.startMs)} ms)`)
check(`memory per stored plant beyond the strings (${fmt(plantMemory?.plants)} plants)`, '≤ 200 bytes', plantMemory?.beyondStringsBytesPerPlant, plantMemory?.beyondStringsBytesPerPlant <= 200, plantMemory === undefined ? '–' : `${fmt(plantMemory.beyondStringsBytesPerPlant)} bytes`)
{
  // The same comparison in server CPU time per request, which other load on a shared machine disturbs less.
  const r = ratio(S['baseline-fastify']?.cpuUs, S.memory?.cpuUs)
  if (r !== null) checks.push({ measure: 'memory store CPU efficiency vs baseline-fastify (CPU µs/req of fastify ÷ memory)', target: 'info', value: `${fmt(r, 2)}×`, result: 'INFO' })
}
for (const [name, row] of Object.entries(summary)) {
  // A target that answers errors is broken, however fast it is.
  if (row.non2xx + row.socketErrors > 0) checks.push({ measure: `${name} answered only 2xx`, target: '0 errors', value: `${row.non2xx} non-2xx, ${row.socketErrors} socket errors`, result: 'FAIL' })
}

const header = ['target', 'req/s', 'p50 ms', 'p99 ms', '× fastify', '× raw', 'CPU µs/req', 'RSS MB', 'start ms', 'non-2xx']
const rows = Object.entries(summary).map(([name, r]) => [
  name + (r.connections !== options.connections ? ` (${r.connections} conn)` : ''),
  fmt(r.rps), fmt(r.p50, 2), fmt(r.p99, 2), fmt(r.xFastify, 2), fmt(r.xRaw, 2), fmt(r.cpuUs, 0), fmt(r.rssMB, 0), fmt(r.startMs, 0),
  r.non2xx + r.socketErrors === 0 ? '0' : `${r.non2xx + r.socketErrors} !!`
])
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)))
const line = (cells) => cells.map((c, i) => i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])).join('  ')
console.log('\n' + line(header))
console.log(widths.map((w) => '-'.repeat(w)).join('  '))
for (const r of rows) console.log(line(r))
if (plantMemory) console.log(`\nmemory per stored plant (${fmt(plantMemory.plants)} plants, ${plantMemory.nameLength}-char names): ${plantMemory.heapBytesPerPlant} heap bytes, of which ${plantMemory.stringBytesPerPlant} the name: ${plantMemory.beyondStringsBytesPerPlant} bytes beyond the strings`)
for (const [name, why] of Object.entries(skipped)) console.log(`skipped ${name}: ${why}`)
for (const note of notes) console.log(`note ${note}`)
console.log('\nchecks (ratios of medians, same run):')
for (const c of checks) console.log(`  ${c.result.padEnd(4)}  ${c.measure}: ${c.value} (target ${c.target})`)

// ---------------------------------------------------------------------------------------------
// Files: bench/results/<date>.json and .md, and latest.json / latest.md

const settings = `${tool}${pin ? `, server on CPU ${serverCpus}, load on CPU ${loadCpus}` : ', no pinning'}, ${options.rounds} rounds × (${options.warmup} s warm-up + ${options.duration} s), ${options.connections} connections (postgres/pgbench ${options.pgConnections})`
const md = [
  `# Plant Store benchmark, ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  '',
  `Machine: ${machine.cpu}, ${machine.cores} cores (shared by the server and the load generator), ${machine.memoryGB} GB, ${machine.os}, Node ${machine.node}.`,
  `Settings: ${settings}. Medians over rounds; every request a valid POST /plants with a new id.`,
  '',
  `| ${header.join(' | ')} |`,
  `|${header.map((_, i) => i === 0 ? '---' : '---:').join('|')}|`,
  ...rows.map((r) => `| ${r.join(' | ')} |`),
  '',
  ...(plantMemory ? [`Memory per stored plant (${fmt(plantMemory.plants)} plants, ${plantMemory.nameLength}-character names): ${plantMemory.heapBytesPerPlant} heap bytes, of which ${plantMemory.stringBytesPerPlant} are the name string: **${plantMemory.beyondStringsBytesPerPlant} bytes beyond the strings**.`, ''] : []),
  ...Object.entries(skipped).map(([name, why]) => `- skipped ${name}: ${why}`),
  ...notes.map((n) => `- note ${n}`),
  ...(Object.keys(skipped).length + notes.length > 0 ? [''] : []),
  '| check | target | value | result |',
  '|---|---|---|---|',
  ...checks.map((c) => `| ${c.measure} | ${c.target} | ${c.value} | ${c.result} |`),
  ''
].join('\n')
mkdirSync(RESULTS, { recursive: true })
const stamp = startedAt.toISOString().replace(/[:.]/g, '-')
const json = JSON.stringify({ date: startedAt.toISOString(), machine, tool, pinned: pin, options, summary, plantMemory, rounds, skipped, notes, checks }, null, 2)
for (const [file, text] of [[`bench-${stamp}.json`, json], [`bench-${stamp}.md`, md], ['latest.json', json], ['latest.md', md]]) writeFileSync(join(RESULTS, file), text + '\n')
console.log(`\nwritten: bench/results/bench-${stamp}.{json,md} and bench/results/latest.{json,md}`)

// A broken target (errors) makes the run fail; a missed performance target is reported, not an exit status.
process.exitCode = checks.some((c) => c.measure.endsWith('answered only 2xx')) ? 1 : 0
