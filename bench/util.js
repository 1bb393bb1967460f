// What the bench commands share: the servers they start, the load they put on them, and small functions.
import { spawn, spawnSync } from 'node:child_process'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { createServer } from 'node:net'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const BENCH = dirname(fileURLToPath(import.meta.url))
export const ROOT = dirname(BENCH)
export const RESULTS = join(BENCH, 'results')
export const TOKEN = 'bench-token-0123456789abcdef'

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
export const median = (values) => {
  const sorted = values.filter((v) => typeof v === 'number' && Number.isFinite(v)).sort((a, b) => a - b)
  if (sorted.length === 0) return null
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
export const percentile = (sorted, p) => sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p / 100))]
export const ratio = (a, b) => a === null || a === undefined || !b ? null : a / b
export const fmt = (n, digits = 0) => n === null || n === undefined || Number.isNaN(n) ? '–' : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

/** Parses a positive number option, or exits with a message naming it. */
export function positive (value, fallback, name) {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`bench: --${name} must be a positive number, got ${value}`)
    process.exit(2)
  }
  return n
}

/** Whether `command argv…` can be run at all (installed, executable). */
export const has = (command, argv) => {
  const result = spawnSync(command, argv, { stdio: 'ignore' })
  return result.error === undefined && result.status !== null
}

export const machine = () => ({
  cpu: os.cpus()[0]?.model ?? 'unknown',
  cores: os.cpus().length,
  memoryGB: Math.round(os.totalmem() / 2 ** 30),
  os: `${os.type()} ${os.release()}`,
  node: process.version
})

/**
 * The server on CPU 0 and the load generator on CPU 1 (taskset), so that they do not take turns on
 * one core; `pinned(cpu, argv)` gives the argv to spawn. taskset execs, so the pid is the program's.
 */
export function pinning (enabled) {
  const pin = enabled && os.cpus().length >= 2 && has('taskset', ['-c', '0', 'true'])
  return { pin, pinned: (cpu, argv) => pin ? ['taskset', '-c', cpu, ...argv] : argv }
}

/** The service's environment: its own settings come from the bench only, never from the caller's shell. */
export function serviceEnv (extra = {}) {
  const own = /^(PORT|HOST|LOG_LEVEL|API_TOKENS|API_TOKENS_FILE|DATABASE_.*|BODY_LIMIT|MAX_PLANTS|NODE_OPTIONS|METRICS_.*|OTEL_.*)$/
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !own.test(name)))
  // Metrics on, as the Docker image runs them: a free port, nothing scrapes it. The access log at info.
  return { ...env, API_TOKENS: TOKEN, LOG_LEVEL: 'info', METRICS_PORT: '0', ...extra }
}

/** The servers the bench compares: the service, the same-featured peer and bare Fastify. */
export const SERVERS = {
  'baseline-fastify': { script: join(BENCH, 'baseline-fastify.js'), env: () => serviceEnv() },
  peer: { script: join(BENCH, 'peer.js'), env: () => serviceEnv() },
  memory: { script: join(ROOT, 'dist', 'server.js'), env: () => serviceEnv(), service: true }
}

export function freePort () {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** One HTTP request to 127.0.0.1 with the bench's token; resolves { status, body } or rejects with the socket error. */
export function call (port, method, path, body, timeoutMs = 2000) {
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

/**
 * Spawns argv with PORT and HOST set and stdout written to `logFile`, and waits for its first 2xx
 * to `POST /plants`, polled every millisecond. Resolves { child, port, startMs } (spawn to that
 * answer; `started`, the spawn's process.hrtime.bigint()); rejects when it exits first or does not answer within timeoutMs.
 */
export async function startServer (argv, env, { logFile, timeoutMs = 10000, probeId = 1 }) {
  const port = await freePort()
  const stdout = openSync(logFile, 'w')
  const started = process.hrtime.bigint()
  const child = spawn(argv[0], argv.slice(1), { env: { ...env, PORT: String(port), HOST: '127.0.0.1' }, cwd: ROOT, stdio: ['ignore', stdout, 'pipe'] })
  closeSync(stdout)
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr = (stderr + chunk).slice(-4000) })
  let exited = false
  child.once('exit', (code, signal) => { exited = true; stderr += `\n(exit ${signal ?? code})` })
  child.once('error', (error) => { exited = true; stderr += String(error) })
  const probe = JSON.stringify({ id: probeId, name: 'start probe' })
  const deadline = Date.now() + timeoutMs
  let last = ''
  while (!exited && Date.now() < deadline) {
    try {
      const res = await call(port, 'POST', '/plants', probe, 1000)
      if (res.status >= 200 && res.status < 300) return { child, port, started, startMs: Number(process.hrtime.bigint() - started) / 1e6 }
      last = `answered ${res.status} ${res.body.slice(0, 200)}`
      await sleep(20)
    } catch (error) {
      last = error.code ?? error.message
      await sleep(1)
    }
  }
  await stopServer(child)
  throw new Error(exited ? `exited at start: ${stderr.trim().split('\n').at(-1) ?? ''}` : `no 2xx within ${timeoutMs} ms (last: ${last})`)
}

export async function stopServer (child, graceMs = 10000) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(timer)
}

/** Runs a command to completion with a time bound; resolves { status, stdout, stderr }. */
export function run (command, argv, { env = process.env, timeoutMs, cwd = ROOT } = {}) {
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

/** The JSON after `BENCH_RESULT ` on a line of a load generator's stdout, or null. */
export const resultLine = (stdout) => {
  const line = stdout.split('\n').find((l) => l.startsWith('BENCH_RESULT '))
  return line === undefined ? null : JSON.parse(line.slice('BENCH_RESULT '.length))
}

/** The id mixes of `npm run bench` and `npm run bench:instructions` (bench/ids.lua says what each sends). */
export const ID_MIXES = ['small', 'snowflake', 'mixed', 'spaced']

/** `--ids` of those commands, or exits with a message naming it. */
export function idMix (value) {
  if (ID_MIXES.includes(value)) return value
  console.error(`bench: --ids must be one of ${ID_MIXES.join(', ')}, got ${value}`)
  process.exit(2)
}

/**
 * Valid `POST /plants` requests with new ids for `seconds` (bench/ids.lua under wrk, or
 * bench/load.js with autocannon): `ids` one of ID_MIXES, counting from idBase (small ids stay below 2^32
 * while idBase and the requests sent do), or
 * ascending from idBase, or random below 2^53 (seeded by idBase).
 * Resolves wrk's figures: requests, durationUs, p50Us, p99Us, maxUs and the error counts.
 */
export async function load ({ tool, port, connections, seconds, ids = 'mixed', idBase, pinned, cpu = '1', timeoutS = 5 }) {
  const env = { ...process.env, BENCH_TOKEN: TOKEN, BENCH_IDS: ids, BENCH_ID_BASE: String(idBase) }
  const url = `http://127.0.0.1:${port}/plants`
  const argv = tool === 'wrk'
    ? ['wrk', '-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', `${timeoutS}s`, '-s', join(BENCH, 'ids.lua'), url]
    : [process.execPath, join(BENCH, 'load.js'), url, '--connections', String(connections), '--seconds', String(seconds)]
  const [command, ...rest] = pinned(cpu, argv)
  const { status, stdout, stderr } = await run(command, rest, { env, timeoutMs: (seconds + 30) * 1000 })
  const r = resultLine(stdout)
  if (r === null) throw new Error(`${tool} failed (status ${status}): ${stderr.trim().split('\n').slice(-3).join(' | ')}`)
  return { ...r, errors: r.non2xx + r.connectErrors + r.readErrors + r.writeErrors + r.timeouts }
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100

/** CPU time (user + system, all threads) used so far by a process, in seconds; null off Linux. */
export function cpuSeconds (pid) {
  try {
    // The fields after the command name, which is in parentheses and may contain spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
  } catch {
    return null
  }
}

/**
 * Seconds the process's main thread has waited, runnable, for a CPU so far (/proc/<pid>/schedstat); null off Linux.
 * Other processes on the server's CPU show here, not in its CPU time: the host's share of a round's latency.
 */
export function runQueueSeconds (pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e9
  } catch {
    return null
  }
}

const GC_LINE = /^\[\d+:0x[0-9a-f]+\]\s+([\d.]+) ms: (Scavenge|Minor Mark-Sweep|Mark-Compact|Mark-Sweep)\b.*?, ([\d.]+) \/ [\d.]+ ms/

/**
 * The pauses of node's `--trace-gc` lines in `text` (a server's stdout) that began from fromMs to toMs after the
 * process started: { scavenges, fullGCs, pauseMs, maxPauseMs }. Young-generation collections are Scavenge and
 * Minor Mark-Sweep; the others collect the whole heap. Each pause is the main thread's, as V8 reports it.
 */
export function gcPauses (text, fromMs = 0, toMs = Infinity) {
  const gc = { scavenges: 0, fullGCs: 0, pauseMs: 0, maxPauseMs: 0 }
  for (const line of text.split('\n')) {
    const m = GC_LINE.exec(line)
    if (m === null || Number(m[1]) < fromMs || Number(m[1]) > toMs) continue
    if (m[2] === 'Scavenge' || m[2] === 'Minor Mark-Sweep') gc.scavenges++
    else gc.fullGCs++
    gc.pauseMs += Number(m[3])
    gc.maxPauseMs = Math.max(gc.maxPauseMs, Number(m[3]))
  }
  return gc
}

export function vmRssBytes (pid) {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match === null ? null : Number(match[1]) * 1024
  } catch {
    return null
  }
}
