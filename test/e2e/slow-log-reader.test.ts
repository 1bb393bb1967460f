import { spawn, type ChildProcessByStdio } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import type { Readable } from 'node:stream'
import { describe, expect, it, onTestFinished } from 'vitest'
import { sampleValue } from '../helpers.js'
import { SERVER } from './server-process.js'

// A log reader that falls behind (a log shipper, Docker's log driver) or stops reading: the service
// must pay in log lines, never in requests or memory (pino.destination bounded, wired in main.ts).
// Here, what must hold whatever the machine's speed; the throughput is for benchmarks.

const TOKEN = 'slow-log-token'
const MiB = 1024 * 1024

type Server = ChildProcessByStdio<null, Readable, Readable>

/** Starts the built server with stdout a pipe; resolves once it listens, with the port read from its first lines. */
async function start (env: NodeJS.ProcessEnv): Promise<{ child: Server, port: number, metricsPort: number | undefined, text: () => string }> {
  const child = spawn(process.execPath, [SERVER], {
    env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', API_TOKENS: TOKEN, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  onTestFinished(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  let text = ''
  const onData = (chunk: Buffer) => { text += chunk.toString('utf8') }
  child.stdout.on('data', onData)
  const listening = (msg: string) => new RegExp(`"msg":"${msg} listening at http://127\\.0\\.0\\.1:(\\d+)"`)
  const deadline = Date.now() + 15000
  while (!listening('Server').test(text) || (env.METRICS_PORT !== undefined && !/"msg":"Metrics listening[^"]*:(\d+)/.test(text))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`server did not start: ${stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  child.stdout.off('data', onData)
  child.stdout.pause()
  const metrics = /"msg":"Metrics listening[^"]*:(\d+)/.exec(text)
  return { child, port: Number(listening('Server').exec(text)?.[1]), metricsPort: metrics === null ? undefined : Number(metrics[1]), text: () => text }
}

/** Reads the pipe at `bytesPerSecond` (a tenth every 100 ms), appending what it reads to `sink`; returns a function that reads at full speed from then on. */
function readAtRate (stream: Readable, bytesPerSecond: number, sink: { text: string }): () => void {
  const timer = setInterval(() => {
    let budget = bytesPerSecond / 10
    while (budget > 0 && stream.readableLength > 0) {
      const chunk = stream.read(Math.min(budget, stream.readableLength)) as Buffer | null
      if (chunk === null) break
      sink.text += chunk.toString('latin1')
      budget -= chunk.length
    }
    stream.read(0)
  }, 100)
  onTestFinished(() => { clearInterval(timer) })
  return () => {
    clearInterval(timer)
    stream.on('data', (chunk: Buffer) => { sink.text += chunk.toString('latin1') }).resume()
  }
}

const rssBytes = (pid: number): number => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1]) * 1024

interface Answers {
  statuses: Map<number, number>
  errors: string[]
  /** Creates served (200, or 507 once MAX_PLANTS is reached) per second of the run. */
  servedPerSecond: number[]
  total: number
}

/** `connections` keep-alive clients creating unique plants until `stop()`; resolves when every request in flight is answered. */
function createPlants (port: number, connections: number, firstId: number): { stop: () => Promise<Answers> } {
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const answers: Answers = { statuses: new Map(), errors: [], servedPerSecond: [], total: 0 }
  const started = Date.now()
  let id = firstId
  let stopping = false
  const one = () => new Promise<void>((resolve) => {
    const body = JSON.stringify({ id: id++, name: 'fern' })
    const req = request({
      port,
      host: '127.0.0.1',
      method: 'POST',
      path: '/plants',
      agent,
      timeout: 30000,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'content-length': body.length }
    }, (res) => {
      res.resume().on('end', () => {
        const status = res.statusCode ?? 0
        answers.total++
        answers.statuses.set(status, (answers.statuses.get(status) ?? 0) + 1)
        if (status === 503 && res.headers['retry-after'] === undefined) answers.errors.push('503 without Retry-After')
        if (status !== 503) {
          const second = Math.floor((Date.now() - started) / 1000)
          answers.servedPerSecond[second] = (answers.servedPerSecond[second] ?? 0) + 1
        }
        resolve()
      })
    })
    req.on('timeout', () => { req.destroy(new Error('no answer within 30 s')) })
    req.on('error', (error) => { answers.errors.push(error.message); resolve() })
    req.end(body)
  })
  const loops = Array.from({ length: connections }, async () => { while (!stopping) await one() })
  return {
    async stop () {
      stopping = true
      await Promise.all(loops)
      agent.destroy()
      return answers
    }
  }
}

/** 16 clients creating plants for `ms`, with the server's growth in RSS over that time (sampled every 100 ms). */
async function createPlantsFor (server: { child: Server, port: number }, ms: number) {
  const pid = server.child.pid as number
  const rssAtStart = rssBytes(pid)
  let rssMax = rssAtStart
  const sampler = setInterval(() => { rssMax = Math.max(rssMax, rssBytes(pid)) }, 100)
  onTestFinished(() => { clearInterval(sampler) })
  const load = createPlants(server.port, 16, 1)
  await new Promise((resolve) => setTimeout(resolve, ms))
  const answers = await load.stop()
  clearInterval(sampler)
  return { answers, rssGrowth: rssMax - rssAtStart }
}

const accessLines = (text: string) => text.split('\n').filter((line) => line.includes('"msg":"request"') && line.includes('"route":"/plants"')).length

describe('a log reader that falls behind or stops', () => {
  it('with stdout read at 64 KB/s under 15 s of creates: answers every request, keeps serving, grows in RSS at most 32 MB more than a server whose ' +
    'stdout is read at full speed, and drops, counts and reports the lines it cannot write', async () => {
    // MAX_PLANTS small: the store's own growth (its id index) is not what this test measures; the
    // creates beyond it are answered 507 and logged like any other.
    const env = { METRICS_PORT: '0', LOG_BUFFER_MAX_BYTES: String(MiB), MAX_PLANTS: '50000' }
    // A control under the same creates at the same time, its stdout read at full speed: what the process grows by
    // anyway (V8 sizes its heap to the allocation rate, which depends on the machine and what else runs on it).
    const [control, server] = await Promise.all([start(env), start(env)])
    control.child.stdout.resume()
    const sink = { text: server.text() }
    const fullSpeed = readAtRate(server.child.stdout, 64 * 1024, sink)
    const [fast, { answers, rssGrowth }] = await Promise.all([createPlantsFor(control, 15000), createPlantsFor(server, 15000)])
    control.child.kill('SIGKILL')
    expect(fast.answers.errors).toEqual([])

    expect(answers.errors).toEqual([])
    expect([...answers.statuses.keys()].every((status) => status === 200 || status === 503 || status === 507)).toBe(true)
    // Served all through the run, not stalled behind the reader: creates served in every second.
    const perSecond = Array.from({ length: 15 }, (_, second) => answers.servedPerSecond[second] ?? 0)
    expect(perSecond.filter((count) => count === 0)).toEqual([])
    // What waits for the reader is bounded by LOG_BUFFER_MAX_BYTES (1 MiB); unbounded, it holds every line the
    // reader has not taken (docs/testing.md).
    expect(rssGrowth - fast.rssGrowth).toBeLessThanOrEqual(32 * MiB)

    // The reader catches up: every request's access line was written or counted as dropped, and
    // the warn lines (one each time the writer caught up after drops) add up to the counter.
    fullSpeed()
    const scrape = async () => (await fetch(`http://127.0.0.1:${server.metricsPort ?? 0}/metrics`)).text()
    let dropped = 0
    await expect.poll(async () => {
      dropped = sampleValue(await scrape(), 'plant_store_log_lines_dropped_total') ?? -1
      const reported = sink.text.split('\n').filter((line) => line.includes('"msg":"log lines dropped: the log reader fell behind"'))
        .reduce((sum, line) => sum + (JSON.parse(line) as { dropped: number }).dropped, 0)
      return reported === dropped && accessLines(sink.text) + dropped >= answers.total
    }, { timeout: 30000, interval: 200 }).toBe(true)
    expect(dropped).toBeGreaterThan(0)
    expect(accessLines(sink.text)).toBeLessThanOrEqual(answers.total)
  }, 120000)

  it('with stdout that nobody reads: answers every request, and SIGTERM still closes it with exit status 0', async () => {
    const server = await start({ LOG_BUFFER_MAX_BYTES: '65536' })
    // The pipe is never read again: it fills (64 KiB), then the service's 64 KiB, then lines drop.
    const load = createPlants(server.port, 8, 1)
    await new Promise((resolve) => setTimeout(resolve, 5000))
    const answers = await load.stop()
    expect(answers.errors).toEqual([])
    expect(answers.statuses.get(200)).toBeGreaterThan(1000)
    expect([...answers.statuses.keys()].every((status) => status === 200 || status === 503)).toBe(true)
    const exited = new Promise((resolve) => server.child.once('exit', (code, signal) => resolve({ code, signal })))
    server.child.kill('SIGTERM')
    expect(await exited).toEqual({ code: 0, signal: null })
  }, 60000)
})
