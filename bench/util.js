// Small helpers shared by the bench modules (bench/run.js and what it imports).
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { createServer } from 'node:net'
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
export const sum = (values) => values.reduce((a, b) => a + (b ?? 0), 0)
export const percentile = (sorted, p) => sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p / 100))]
export const ratio = (a, b) => a === undefined || b === undefined || !b ? null : a / b
export const fmt = (n, digits = 0) => n === null || n === undefined ? '–' : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

/** Whether `command argv…` can be run at all (installed, executable). */
export const has = (command, argv) => {
  const result = spawnSync(command, argv, { stdio: 'ignore' })
  return result.error === undefined && result.status !== null
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

/** One HTTP request to 127.0.0.1; resolves { status, body } or rejects with the socket error. */
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

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100

/** CPU time (user + system) used so far by a process, in seconds; null off Linux. */
/**
 * Reads a child's stdout (a pipe) the way a log shipper that falls behind does: at most
 * `bytesPerSecond`, a tenth of it every 100 ms; Infinity reads as fast as the lines come. Returns
 * a function that stops the reading (the pipe is then read at full speed, so the child never waits).
 */
export function readAtRate (stream, bytesPerSecond) {
  if (!Number.isFinite(bytesPerSecond)) {
    stream.resume()
    return () => {}
  }
  const perTick = Math.ceil(bytesPerSecond / 10)
  stream.pause()
  const timer = setInterval(() => {
    let budget = perTick
    while (budget > 0 && stream.readableLength > 0) {
      const chunk = stream.read(Math.min(budget, stream.readableLength))
      if (chunk === null) break
      budget -= chunk.length
    }
    // Lets the stream take more from the pipe (up to its high-water mark), now that it has room.
    stream.read(0)
  }, 100)
  return () => {
    clearInterval(timer)
    stream.resume()
  }
}

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

export function vmRssBytes (pid) {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match === null ? null : Number(match[1]) * 1024
  } catch {
    return null
  }
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

/** The JSON after `BENCH_RESULT ` on a line of a helper's stdout, or null. */
export const resultLine = (stdout) => {
  const line = stdout.split('\n').find((l) => l.startsWith('BENCH_RESULT '))
  return line === undefined ? null : JSON.parse(line.slice('BENCH_RESULT '.length))
}
