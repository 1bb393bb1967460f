// npm run bench: Plant Store measured against its baselines, side by side, in one interleaved run.
// See bench/README.md for what each target means and how to read the table.
// This file is the orchestrator (options, rounds, interleaving, starting and measuring a server);
// the targets are in bench/targets.js, the load runners in bench/load.js, the table and checks in
// bench/report.js.
import { spawn, spawnSync } from 'node:child_process'
import { closeSync, mkdirSync, openSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { INSTRUCTION_DEFAULTS, measureInstructions } from './instructions.js'
import { createLoad } from './load.js'
import { DEFAULT_PG_URL } from './postgres.js'
import { evaluateChecks, printReport, runFailed, summarize, writeResults } from './report.js'
import { DEFAULT_TARGETS, OPT_IN_GROUPS, targetByName, TARGETS } from './targets.js'
import { call, cpuSeconds, fmt, freePort, has, median, readAtRate, RESULTS, ROOT, sleep, vmRssBytes } from './util.js'

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
    instructions: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false }
  }
})

if (args.help) {
  console.log(`npm run bench -- [options]
  --duration S         measured seconds per target and round (default 10; --quick 3)
  --warmup S           warm-up seconds before each measured window (default 3; --quick 1)
  --rounds N           interleaved rounds; the table shows medians (default 3; --quick 2)
  --connections N      concurrent connections for the HTTP targets (default 50)
  --pg-connections N   connections for the postgres targets and pgbench (default 16)
  --targets a,b        any of ${DEFAULT_TARGETS.join(', ')} (default: all);
${OPT_IN_GROUPS.map(([from, names]) => `                       also ${names.join(', ')} (${from}, opt-in)`).join('\n')}
  --quick              short run for development (about a minute)
  --tool wrk|autocannon  load generator (default: wrk when installed)
  --threads N          wrk threads (default 1 when pinned, 2 otherwise)
  --no-pin             do not pin the server and the load generator to separate CPUs
  --server-cpus L --load-cpus L   taskset CPU lists (default 0 and 1)
  --plants N           plants for the memory-per-plant measure (default 1000000)
  --cpu-prof           run the service targets with node --cpu-prof (profiles in bench/results/profiles)
  --starts N           starts per target and round for the start time, the last one loaded (default 3; --quick 2)
  --start-timeout S    a target not answering within S seconds is skipped (default 10)
  --instructions       also count instructions per request of each HTTP target under callgrind
                       (bench/instructions.js; about a minute per target)
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
  targets: args.targets === undefined ? DEFAULT_TARGETS : args.targets.split(',').map((t) => t.trim()).filter(Boolean)
}
for (const target of options.targets) {
  if (!targetByName.has(target)) {
    console.error(`bench: unknown target "${target}"; targets: ${TARGETS.map((t) => t.name).join(', ')}`)
    process.exit(2)
  }
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
const runTmp = join(RESULTS, `tmp-${process.pid}`)
const profileDir = join(RESULTS, 'profiles')
mkdirSync(runTmp, { recursive: true })

/** Runs argv with the CPUs pinned (when pinning), as `taskset -c LIST argv...`: taskset execs, so the pid is the program's. */
const pinned = (cpus, argv) => pin ? ['taskset', ['-c', cpus, ...argv]] : [argv[0], argv.slice(1)]
const nodeFlags = () => args['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []
const ctx = { options, tool, threads, loadCpus, pinned, runTmp }
const { load, measurePgbench, measurePlantMemory } = createLoad(ctx)

// ---------------------------------------------------------------------------------------------
// HTTP targets: each started fresh, as a child process, on its own port

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
  // stdout (the access log, at info) goes to a real file, as in production: each line is written
  // (page cache, not /dev/null's free discard), never into a full pipe. Truncated at every start;
  // the run's tmp folder goes at the end. A target with `stdoutRate` writes into a pipe instead,
  // read by this process at that many bytes a second (a log shipper that keeps up, or falls behind).
  const piped = target.stdoutRate !== undefined
  const stdout = piped ? 'pipe' : openSync(join(runTmp, `${target.name}.stdout`), 'w')
  const child = spawn(command, rest, { env, cwd: ROOT, stdio: ['ignore', stdout, 'pipe'] })
  if (piped) {
    const stopReading = readAtRate(child.stdout, target.stdoutRate)
    child.once('exit', stopReading)
  } else {
    closeSync(stdout)
  }
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
  const target = targetByName.get(name)
  const prepared = await target.prepare(round, ctx)
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
  }
}

/** One round of one load target, whatever its kind. */
const measureRound = (name, round) => {
  const target = targetByName.get(name)
  return target.kind === 'pgbench' ? measurePgbench(round, { pooled: target.pooled === true }) : measureHttp(name, round)
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
const loadTargets = options.targets.filter((t) => targetByName.get(t).kind !== 'plant-memory')
console.log(`Plant Store benchmark, ${startedAt.toISOString()}`)
console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGB} GB, ${machine.os}, node ${machine.node}`)
console.log(`load generator: ${tool}${tool === 'autocannon' ? ' (wrk is not installed: apt-get install wrk; autocannon saturates itself near 50k req/s on 2 cores)' : ''}` +
  `; ${pin ? `server pinned to CPU ${serverCpus}, load generator to CPU ${loadCpus} (taskset)` : 'no CPU pinning'}`)
console.log(`rounds ${options.rounds} × (warm-up ${options.warmup} s + ${options.duration} s); ${options.connections} connections (postgres, postgres-pooled and pgbench: ${options.pgConnections})`)
console.log(`targets: ${options.targets.join(', ')}\n`)

const rounds = Object.fromEntries(options.targets.map((t) => [t, []]))
const skipped = {}
const notes = []
const instructions = {}

try {
  for (let round = 1; round <= options.rounds; round++) {
    for (const name of loadTargets) {
      if (skipped[name] !== undefined) continue
      let result
      try {
        result = await measureRound(name, round)
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
  for (const name of options.targets.filter((t) => targetByName.get(t).kind === 'plant-memory')) {
    const r = await measurePlantMemory()
    if (r.skipped !== undefined) skipped[name] = r.skipped
    else rounds[name].push(r)
    console.log(r.skipped !== undefined
      ? `${name} SKIPPED: ${r.skipped}`
      : `${name}: ${fmt(r.plants)} plants, ${r.heapBytesPerPlant} heap bytes per plant, of which ${r.stringBytesPerPlant} the name string: ${r.beyondStringsBytesPerPlant} bytes beyond the strings`)
  }
  if (args.instructions) {
    // Machine-independent: executed instructions per request under callgrind (bench/instructions.js).
    for (const name of loadTargets.filter((t) => targetByName.get(t).kind === 'http' && skipped[t] === undefined)) {
      let r
      try { r = await measureInstructions(name, { ...INSTRUCTION_DEFAULTS, runTmp }) } catch (error) { r = { skipped: `failed: ${error.message}` } }
      if (r.skipped === undefined) instructions[name] = r
      else notes.push(`${name}: instructions not counted: ${r.skipped}`)
      console.log(r.skipped !== undefined
        ? `instructions ${name.padEnd(16)} SKIPPED: ${r.skipped}`
        : `instructions ${name.padEnd(16)} ${fmt(r.perRequest).padStart(9)} per request (windows ${r.windows.map((w) => fmt(w)).join(', ')})` +
          (r.non2xx > 0 ? `  !! ${r.non2xx} non-2xx or errors` : ''))
    }
  }
} finally {
  rmSync(runTmp, { recursive: true, force: true })
}

// ---------------------------------------------------------------------------------------------
// Table, checks and files

const summary = summarize(rounds, loadTargets, instructions)
const plantMemory = rounds['plant-memory']?.[0]
const checks = evaluateChecks({ summary, plantMemory, options })
printReport({ summary, plantMemory, skipped, notes, checks, options })
writeResults({ startedAt, machine, tool, pin, serverCpus, loadCpus, options, summary, plantMemory, rounds, skipped, notes, checks })

// A broken target (errors) makes the run fail; a missed performance target is reported, not an exit status.
process.exitCode = runFailed(checks) ? 1 : 0

// Start to first answer of node dist/server.js, npm start and the image against bare Fastify, side by
// side, and docker stop (bench/start-time.js; its own interleaved run, the image built from this tree).
console.log('')
const startTimes = spawnSync(process.execPath, [join(ROOT, 'bench', 'start-time.js'), '--starts', String(quick ? 3 : 7)], { cwd: ROOT, stdio: 'inherit' })
if (startTimes.status !== 0) process.exitCode = 1
