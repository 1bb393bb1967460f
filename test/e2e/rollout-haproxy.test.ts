import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { docBlock } from '../docs/blocks.js'
import { createTestSchemas, type TestSchemas } from '../plants/postgres-test-schemas.js'
import { E2E_TOKEN, run, startServer, type RunningProcess, type ServerProcess } from './server-process.js'
import { postPlant } from './storage-process.js'
import { freePort, imageEnv, until } from '../helpers.js'

// Rollouts as users run them: three built servers (`node dist/server.js`) with the image's shutdown
// settings on one PostgreSQL database behind a real HAProxy (Debian's, started here as a child process
// with docs/operating.md's backend, its servers on free ports), 32 keep-alive clients creating plants the whole time, and
// each replica in turn stopped with SIGTERM, started again on its port and waited for until the
// balancer sees it up: what a Compose or Kubernetes rollout does. In HTTP mode with retries and
// redispatch, and in TCP mode without either (how kube-proxy, a cloud network load balancer or
// Docker's ingress forward): no request may fail, and every 200 must be a row. Then a SIGKILL of one
// replica: nothing acknowledged is lost, and every failed request, replayed, answers 200 (409 with
// another body). Needs haproxy and PostgreSQL (TEST_DATABASE_URL); skipped with the reason without
// them, and REQUIRE_HAPROXY=1 / REQUIRE_POSTGRES=1 (CI) turn that skip into a failure.

const HAPROXY = process.env.HAPROXY ?? 'haproxy'
const databaseUrl = process.env.TEST_DATABASE_URL
const haproxyMissing = spawnSync(HAPROXY, ['-v'], { stdio: 'ignore' }).status === 0
  ? undefined
  : `${HAPROXY} is not installed (apt-get install haproxy, or set HAPROXY)`
const skip = haproxyMissing ?? (databaseUrl === undefined ? 'TEST_DATABASE_URL is not set' : undefined)
const required = [process.env.REQUIRE_HAPROXY === '1' ? haproxyMissing : undefined, process.env.REQUIRE_POSTGRES === '1' &&
  databaseUrl === undefined
  ? 'TEST_DATABASE_URL is not set'
  : undefined]
  .filter((reason) => reason !== undefined)

for (const reason of required) {
  describe('rollouts behind HAProxy', () => {
    it('runs: REQUIRE_HAPROXY=1 / REQUIRE_POSTGRES=1 turn a skip into a failure', () => {
      expect.fail(reason)
    })
  })
}

const CLIENTS = 32
const REPLICAS = 3
/** The backend docs/operating.md gives, its comments dropped. */
const BACKEND = docBlock('docs/operating.md', 'rollout-haproxy').split('\n')
  .map((line) => line.replace(/\s*#.*$/, '')).filter((line) => line.trim() !== '')

/** The shutdown settings the image runs with (the Dockerfile's ENV). */
const { SHUTDOWN_DELAY_MS, SHUTDOWN_TIMEOUT_MS } = imageEnv()
if (SHUTDOWN_DELAY_MS === undefined || SHUTDOWN_TIMEOUT_MS === undefined) throw new Error('the Dockerfile sets no shutdown settings')
const SHUTDOWN = { SHUTDOWN_DELAY_MS, SHUTDOWN_TIMEOUT_MS }

type Mode = 'http' | 'tcp'

interface HaProxy {
  port: number
  process: RunningProcess
  /** The balancer's view of each server (UP, DOWN, …), from its stats socket. */
  status: () => Promise<Record<string, string>>
}

async function startHaProxy (dir: string, mode: Mode, ports: number[]): Promise<HaProxy> {
  const port = await freePort()
  const socket = join(dir, `haproxy-${mode}.sock`)
  const config = [
    'global',
    `  stats socket ${socket} mode 600 level admin`,
    '  maxconn 2000',
    'defaults',
    `  mode ${mode}`,
    '  timeout connect 2s',
    '  timeout client 60s',
    '  timeout server 60s',
    'frontend plants',
    `  bind 127.0.0.1:${port}`,
    '  default_backend plants',
    // The page's backend, in HTTP mode as written; in TCP mode a balancer that never retries (kube-proxy, an NLB).
    ...BACKEND.filter((line) => !/^\s*server /.test(line)).map((line) => mode === 'http'
      ? line
      : line.replace(/^(\s*)mode http$/, '$1mode tcp').replace(/^(\s*)retries \d+$/, '$1retries 0').replace(/^(\s*)option redispatch$/, '$1no option redispatch')),
    ...ports.map((replicaPort, i) => `  server r${i} 127.0.0.1:${replicaPort} check`),
    ''
  ].join('\n')
  const file = join(dir, `haproxy-${mode}.cfg`)
  writeFileSync(file, config)
  const proc = run(HAPROXY, ['-f', file, '-db'], {})
  const status = async (): Promise<Record<string, string>> => {
    const csv = await new Promise<string>((resolve, reject) => {
      let text = ''
      const client = connect(socket, () => client.end('show stat\n'))
      client.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => resolve(text)).on('error', reject)
    })
    const [header, ...rows] = csv.replace(/^# /, '').split('\n').filter((line) => line !== '').map((line) => line.split(','))
    const name = header?.indexOf('svname') ?? -1
    const state = header?.indexOf('status') ?? -1
    return Object.fromEntries(rows.filter((row) => /^r\d+$/.test(row[name] ?? '')).map((row) => [row[name] ?? '', row[state] ?? '']))
  }
  return { port, process: proc, status }
}

/** Until `check` holds (every 100 ms; a check that throws has not held yet), or fails after 20 s. */
const holds = (what: string, check: () => Promise<boolean>): Promise<void> => until(() => check().catch(() => false), 20000, what, 100)

interface Outcome {
  id: number
  status?: number
  error?: string
}

/** One keep-alive create; resolves with its status or its error, never rejects. */
function create (agent: Agent, port: number, id: number, name = `plant ${id}`): Promise<Outcome> {
  const body = JSON.stringify({ id, name })
  return new Promise((resolve) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/plants',
      method: 'POST',
      agent,
      headers: { authorization: `Bearer ${E2E_TOKEN}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
    }, (res) => {
      res.resume()
      res.on('end', () => resolve({ id, status: res.statusCode ?? 0 }))
      res.on('error', (error: NodeJS.ErrnoException) => resolve({ id, error: `response ${error.code ?? error.message}` }))
    })
    req.setTimeout(30000, () => req.destroy(new Error('no reply within 30 s')))
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ id, error: error.code ?? error.message }))
    req.end(body)
  })
}

/** 32 clients on keep-alive connections creating new plants through `port` until `work` resolves. */
async function underLoad (port: number, firstId: number, work: () => Promise<void>): Promise<Outcome[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS })
  const outcomes: Outcome[] = []
  let next = firstId
  let done = false
  const clients = Array.from({ length: CLIENTS }, async () => {
    while (!done) outcomes.push(await create(agent, port, next++))
  })
  try {
    await work()
  } finally {
    done = true
    await Promise.all(clients)
    agent.destroy()
  }
  return outcomes
}

describe.skipIf(skip !== undefined)(skip === undefined
  ? 'rollouts behind HAProxy (three built servers, one PostgreSQL database)'
  : `rollouts behind HAProxy skipped: ${skip}`, () => {
  let schemas: TestSchemas
  let dir: string
  beforeAll(() => {
    schemas = createTestSchemas(databaseUrl ?? '')
    dir = mkdtempSync(join(tmpdir(), 'plant-store-haproxy-'))
  })
  afterAll(async () => {
    await schemas.dropAll()
    rmSync(dir, { recursive: true, force: true })
  })

  /** Three replicas on one new schema, each on a port of its own, ready. */
  async function startReplicas (): Promise<{ url: string, ports: number[], replicas: ServerProcess[], start: (i: number) => Promise<ServerProcess> }> {
    const url = await schemas.create()
    const ports = await Promise.all(Array.from({ length: REPLICAS }, () => freePort()))
    const start = async (i: number): Promise<ServerProcess> => {
      const server = await startServer({ DATABASE_URL: url, PORT: String(ports[i]), ...SHUTDOWN })
      await holds(`replica ${i} ready`, async () => (await fetch(`${server.url}/readyz`)).status === 200)
      return server
    }
    // The first start creates the table; the others find it.
    const replicas = [await start(0)]
    for (let i = 1; i < REPLICAS; i++) replicas.push(await start(i))
    return { url, ports, replicas, start }
  }

  /** The ids stored in a schema. */
  async function storedIds (url: string): Promise<Set<number>> {
    const { rows } = await schemas.query<{ id: string }>(`SELECT id::text AS id FROM ${schemas.schemaOf(url)}.plants`)
    return new Set(rows.map((row) => Number(row.id)))
  }

  for (const mode of ['http', 'tcp'] as const) {
    const how = mode === 'http' ? 'HTTP mode with retries 3 and option redispatch' : 'TCP mode with retries 0 and no redispatch'
    it(`loses no request in a rolling restart (SIGTERM, exit, start, ready) under ${CLIENTS} keep-alive clients, ${how}; every 200 is a row`,
      { timeout: 180000 }, async () => {
        const { url, ports, replicas, start } = await startReplicas()
        const balancer = await startHaProxy(dir, mode, ports)
        const allUp = async (): Promise<boolean> => Object.values(await balancer.status()).filter((state) => state === 'UP').length === REPLICAS
        await holds('HAProxy sees every replica up', allUp)

        const outcomes = await underLoad(balancer.port, 1, async () => {
          await sleep(1000)
          for (let i = 0; i < REPLICAS; i++) {
            const replica = replicas[i] as ServerProcess
            replica.child.kill('SIGTERM')
            expect(await replica.exited).toEqual({ code: 0, signal: null })
            replicas[i] = await start(i)
            // Ready for the balancer too before the next one stops (what a rollout waits for).
            await holds(`HAProxy sees replica ${i} up again`, allUp)
          }
          await sleep(1000)
        })

        const failed = outcomes.filter((outcome) => outcome.status !== 200)
        console.info(`rollout behind HAProxy (${mode}): ${outcomes.length} creates, ${failed.length} not 200`)
        expect(failed).toEqual([])
        expect(outcomes.length).toBeGreaterThan(1000)
        const stored = await storedIds(url)
        expect(outcomes.filter((outcome) => !stored.has(outcome.id))).toEqual([])
        expect(stored.size).toBe(outcomes.length)
        balancer.process.child.kill('SIGTERM')
        await balancer.process.exited
      })
  }

  // TCP mode, no retries.
  it(`keeps every acknowledged plant through a SIGKILL of one replica under ${CLIENTS} clients; each failed request replayed answers ` +
    '200, or 409 with another body', { timeout: 120000 }, async () => {
    const { url, ports, replicas } = await startReplicas()
    const balancer = await startHaProxy(dir, 'tcp', ports)
    await holds('HAProxy sees every replica up', async () => Object.values(await balancer.status()).filter((state) => state === 'UP').length === REPLICAS)

    const outcomes = await underLoad(balancer.port, 1, async () => {
      await sleep(1500)
      const victim = replicas[1] as ServerProcess
      victim.child.kill('SIGKILL')
      expect(await victim.exited).toEqual({ code: null, signal: 'SIGKILL' })
      // On until the balancer has taken it out: requests sent to it meanwhile fail too.
      await holds('HAProxy takes the killed replica out', async () => (await balancer.status()).r1 === 'DOWN')
      await sleep(1000)
    })

    const acknowledged = outcomes.filter((outcome) => outcome.status === 200)
    const failed = outcomes.filter((outcome) => outcome.status !== 200)
    console.info(`SIGKILL behind HAProxy (tcp): ${outcomes.length} creates, ${failed.length} failed ` +
      `(${[...new Set(failed.map((outcome) => outcome.error ?? outcome.status))].join(', ')})`)
    // The kill landed with requests in flight: the remedy below has something to do.
    expect(failed.length).toBeGreaterThan(0)
    const stored = await storedIds(url)
    expect(acknowledged.filter((outcome) => !stored.has(outcome.id))).toEqual([])

    // The client's remedy: replay what failed. Stored or not, the same create answers 200 ...
    const balancerUrl = `http://127.0.0.1:${balancer.port}`
    const replays = await Promise.all(failed.map(async (outcome) => (await postPlant(balancerUrl, BigInt(outcome.id), `plant ${outcome.id}`)).status))
    expect(replays.filter((status) => status !== 200)).toEqual([])
    // ... and, now that each is stored, another body for the same id is a 409.
    const conflicts = await Promise.all(failed.map(async (outcome) => (await postPlant(balancerUrl, BigInt(outcome.id), `other ${outcome.id}`)).status))
    expect(conflicts.filter((status) => status !== 409)).toEqual([])
    const after = await storedIds(url)
    expect(failed.filter((outcome) => !after.has(outcome.id))).toEqual([])
    balancer.process.child.kill('SIGTERM')
    await balancer.process.exited
  })
})
