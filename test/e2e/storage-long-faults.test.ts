import { execFile } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { findPgBouncer, startPgBouncer } from '../plants/pgbouncer.js'
import { findPostgresBinaries, startStandbyPair, type StandbyPair } from '../plants/postgres-standby.js'
import { startServer, type ServerProcess } from './server-process.js'
import { get, postPlant } from './storage-process.js'

// Faults that last as long as they do in production: the synchronous standby gone for two
// minutes under creates that do not stop, and the primary turned read-only, directly and through
// PgBouncer. Each check runs all the way through the fault, sampled every second.

const run = promisify(execFile)
const bin = findPostgresBinaries()
const bouncerBinary = findPgBouncer()
const noServer = process.env.TEST_DATABASE_URL === undefined
  ? 'TEST_DATABASE_URL is not set'
  : bin === undefined || !existsSync(join(bin, 'psql'))
    ? 'the PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup, psql) are not installed (apt-get install postgresql, or set PG_BIN)'
    : undefined
const noBouncer = noServer ?? (bouncerBinary === undefined ? 'pgbouncer is not installed (apt-get install pgbouncer, or set PGBOUNCER)' : undefined)
for (const message of [
  ...(process.env.REQUIRE_POSTGRES === '1' && noServer !== undefined ? [`REQUIRE_POSTGRES=1 but ${noServer}: the long fault tests would be skipped`] : []),
  ...(process.env.REQUIRE_PGBOUNCER === '1' && noBouncer !== undefined
    ? [`REQUIRE_PGBOUNCER=1 but ${noBouncer}: the read-only test through PgBouncer would be skipped`]
    : [])
]) {
  describe('built server through long PostgreSQL faults', () => {
    it('runs: REQUIRE_POSTGRES=1 / REQUIRE_PGBOUNCER=1 turn a skip into a failure', () => { expect.fail(message) })
  })
}
for (const [reason, what] of [[noServer, 'long fault tests'], [noBouncer, 'read-only test through PgBouncer']] as const) {
  if (reason !== undefined) console.warn(`PostgreSQL ${what} skipped: ${reason} (CI sets REQUIRE_POSTGRES=1 and REQUIRE_PGBOUNCER=1)`)
}

const STATEMENT_TIMEOUT_MS = 1000
const POOL_MAX = 10
const CONCURRENCY = 16
/** How long the standby stays away: the outage exhausted max_connections (100) after 58 s. */
const OUTAGE_MS = 120_000
/** How long the primary stays frozen: the SIGSTOP lasted 20 s. */
const FREEZE_MS = 20_000
/** Client backends besides the service's pool that a sample may see: the sampling psql itself, and a spare. */
const BACKENDS_BESIDES_POOL = 2

interface Answer { id: bigint, status: number, message: string, ms: number, at: number }

/** Creates new plants from CONCURRENCY clients until stopped, timing each; a client waits 50 ms after a non-200. */
function startLoad (url: string, firstId: bigint) {
  const answers: Answer[] = []
  let next = firstId
  let stopped = false
  const writers = Array.from({ length: CONCURRENCY }, async () => {
    while (!stopped) {
      const id = next++
      const started = performance.now()
      let answer: Answer
      try {
        const reply = await postPlant(url, id, `plant ${id}`)
        answer = {
          id,
          status: reply.status,
          message: reply.status === 200 ? '' : String((reply.body as { message?: string }).message),
          ms: performance.now() - started,
          at: performance.now()
        }
      } catch (error) {
        answer = { id, status: 0, message: String(error), ms: performance.now() - started, at: performance.now() }
      }
      answers.push(answer)
      if (answer.status !== 200) await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })
  return {
    answers,
    async stop () {
      stopped = true
      await Promise.all(writers)
    }
  }
}

/** Client backends on the server, counted by a superuser `psql` of its own: fails when psql cannot connect. */
async function clientBackends (port: number): Promise<number> {
  const { stdout } = await run(join(bin as string, 'psql'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-Atc',
    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"], { env: { PATH: process.env.PATH, PGCONNECT_TIMEOUT: '3' }, timeout: 5000 })
  return Number(stdout.trim())
}

async function readyStatus (server: ServerProcess): Promise<number> {
  try {
    return (await get(server.url, '/readyz')).status
  } catch {
    return 0
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

describe.skipIf(noServer !== undefined)(noServer !== undefined
  ? `PostgreSQL long fault tests skipped: ${noServer}`
  : 'built server through long PostgreSQL faults', () => {
  // Also: backends stay within the pool, and a superuser psql connects all along.
  it(`synchronous standby gone for ${OUTAGE_MS / 1000} s under creates: /readyz 503 throughout, each create answered within T + 1 s, ` +
    'each 200 stored, 200s within 5 s of its return', { timeout: OUTAGE_MS + 90_000 }, async () => {
    const pair = await startStandbyPair(bin as string)
    onTestFinished(() => pair.destroy())
    const server = await startServer({
      DATABASE_URL: pair.primary.url,
      DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      DATABASE_POOL_MAX: String(POOL_MAX)
    })
    await vi.waitFor(async () => expect(await readyStatus(server)).toBe(200), { timeout: 15000, interval: 100 })
    const load = startLoad(server.url, 1n)
    onTestFinished(() => load.stop())
    await vi.waitFor(() => expect(load.answers.filter((answer) => answer.status === 200).length).toBeGreaterThanOrEqual(300), { timeout: 20000, interval: 20 })

    await pair.standby.stop('fast')
    const gone = performance.now()
    const samples: Array<{ t: number, backends: number | string, ready: number }> = []
    while (performance.now() - gone < OUTAGE_MS) {
      const tick = performance.now()
      const [backends, ready] = await Promise.all([clientBackends(pair.primary.port).catch((error: unknown) => String(error)), readyStatus(server)])
      samples.push({ t: Math.round(tick - gone), backends, ready })
      await sleep(1000 - (performance.now() - tick))
    }
    // The standby may stream (and commits succeed) before pg_ctl start returns: the outage ends here.
    const returning = performance.now()
    await pair.standby.start()
    const back = performance.now()
    let readyAgain: number | undefined
    await vi.waitFor(async () => {
      if (readyAgain === undefined && await readyStatus(server) === 200) readyAgain = performance.now() - back
      // Ready again, measured from the standby's return: a number, and within the wait.
      expect(readyAgain).toBeLessThan(20000)
      expect(load.answers.filter((answer) => answer.status === 200 && answer.at >= back).length).toBeGreaterThanOrEqual(200)
    }, { timeout: 20000, interval: 100 })
    await load.stop()

    const { answers } = load
    const during = answers.filter((answer) => answer.at > gone + 100 && answer.at - answer.ms < back)
    // Sent after the standby was down and answered before it was back: no commit can have reached it.
    const inside = answers.filter((answer) => answer.status === 200 && answer.at - answer.ms > gone + 100 && answer.at < returning)
    const firstBack = Math.min(...answers.filter((answer) => answer.status === 200 && answer.at >= back).map((answer) => answer.at)) - back
    const maxBackends = Math.max(...samples.map((sample) => typeof sample.backends === 'number' ? sample.backends : 0))
    const ready200 = samples.filter((sample) => sample.t > STATEMENT_TIMEOUT_MS + 1000 && sample.ready !== 503)
    console.info(`standby outage ${OUTAGE_MS / 1000} s: ${samples.length} samples, client backends max ${maxBackends} (pool ${POOL_MAX}), ` +
      `/readyz not 503 after ${STATEMENT_TIMEOUT_MS + 1000} ms: ${ready200.length}, creates during it ${during.length} ` +
      `(200: ${during.filter((answer) => answer.status === 200).length}, of them sent and answered while the standby was down: ${inside.length}), max ` +
        `create ${Math.round(Math.max(...during.map((answer) => answer.ms)))} ms, ` +
      `over ${STATEMENT_TIMEOUT_MS + 1000} ms: ${during.filter((answer) => answer.ms > STATEMENT_TIMEOUT_MS + 1000).length}; ` +
      `/readyz 200 ${Math.round(readyAgain ?? -1)} ms and first create 200 ${Math.round(firstBack)} ms after its return`)

    const context = 'samples not 503 or over the bound ' +
      `${JSON.stringify(samples.filter((sample) =>
        sample.ready !== 503 || typeof sample.backends !== 'number' || sample.backends > POOL_MAX + BACKENDS_BESIDES_POOL))}\n` +
      '200s sent and answered inside the outage: ' +
        `${JSON.stringify(inside.map((answer) =>
          ({ id: String(answer.id), started: Math.round(answer.at - answer.ms - gone), ms: Math.round(answer.ms) })))}\n` +
      `${pair.logs().slice(-3000)}\n--- service\n${server.stdout.filter((line) => !line.includes('"request completed"')).slice(-30).join('\n')}`
    expect(samples.filter((sample) => typeof sample.backends !== 'number'), `psql refused: ${context}`).toEqual([])
    expect(maxBackends, context).toBeLessThanOrEqual(POOL_MAX + BACKENDS_BESIDES_POOL)
    expect(ready200, context).toEqual([])
    expect(answers.filter((answer) => answer.status !== 200 && answer.status !== 503)).toEqual([])
    expect(inside.length, `200s without the standby: ${context}`).toBe(0)
    expect(answers.filter((answer) => answer.ms > STATEMENT_TIMEOUT_MS + 1000).map((answer) => Math.round(answer.ms))).toEqual([])
    expect(readyAgain).toBeLessThan(2000)
    expect(firstBack).toBeLessThan(5000)
    const acknowledged = answers.filter((answer) => answer.status === 200).map((answer) => String(answer.id))
    const { rows } = await pair.primary.query<{ count: string }>('SELECT count(*)::text AS count FROM plants WHERE id = ANY ($1::int8[])', [acknowledged])
    expect(Number(rows[0]?.count), 'acknowledged plants stored').toBe(acknowledged.length)
    expect(server.child.exitCode).toBe(null)
  })

  // Read-only by default_transaction_read_only and a reload.
  it.skipIf(noBouncer !== undefined)('primary turned read-only, directly and through PgBouncer: /readyz 503 within T + 1 s, ' +
    'creates 503 with nothing stored, ready within 2 s of the change back', { timeout: 90_000 }, async () => {
    const pair: StandbyPair = await startStandbyPair(bin as string)
    onTestFinished(() => pair.destroy())
    const bouncer = await startPgBouncer({ binary: bouncerBinary as string, upstream: { host: '127.0.0.1', port: pair.primary.port } })
    onTestFinished(() => bouncer.stop())
    const env = { DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS) }
    const servers = {
      direct: await startServer({ ...env, DATABASE_URL: pair.primary.url }),
      pgbouncer: await startServer({ ...env, DATABASE_URL: `postgres://postgres@127.0.0.1:${bouncer.port}/postgres` })
    }
    for (const server of Object.values(servers)) {
      await vi.waitFor(async () => expect(await readyStatus(server)).toBe(200), { timeout: 15000, interval: 100 })
      expect((await postPlant(server.url, BigInt(server.port), 'before')).status).toBe(200)
    }

    await pair.primary.query('ALTER SYSTEM SET default_transaction_read_only = on')
    await pair.primary.query('SELECT pg_reload_conf()')
    const turned = performance.now()
    for (const [name, server] of Object.entries(servers)) {
      await vi.waitFor(async () => expect(await readyStatus(server), name).toBe(503), { timeout: STATEMENT_TIMEOUT_MS + 1000, interval: 50 })
      console.info(`read-only primary, ${name}: /readyz 503 ${Math.round(performance.now() - turned)} ms after the reload`)
    }
    const refusedIds: string[] = []
    for (const [name, server] of Object.entries(servers)) {
      for (let n = 0; n < 5; n++) {
        const id = BigInt(server.port) * 100n + BigInt(n)
        const reply = await postPlant(server.url, id, 'refused')
        expect(reply.status, name).toBe(503)
        expect(reply.body, name).toEqual({ error: 503, message: 'the plant store is unavailable, retry later' })
        refusedIds.push(String(id))
      }
      // Still 503 a few seconds on: the fault lasts, and so does the answer.
      await sleep(1000)
      expect(await readyStatus(server), name).toBe(503)
    }
    expect((await pair.primary.query('SELECT id FROM plants WHERE id = ANY ($1::int8[])', [refusedIds])).rows).toEqual([])

    await pair.primary.query('ALTER SYSTEM RESET default_transaction_read_only')
    await pair.primary.query('SELECT pg_reload_conf()')
    const restored = performance.now()
    for (const [name, server] of Object.entries(servers)) {
      await vi.waitFor(async () => expect(await readyStatus(server), name).toBe(200), { timeout: 2000 - (performance.now() - restored), interval: 50 })
      console.info(`read-only primary, ${name}: /readyz 200 ${Math.round(performance.now() - restored)} ms after the change back`)
      expect((await postPlant(server.url, BigInt(server.port) * 1000n, 'after')).status, name).toBe(200)
    }
  })
  // Frozen: SIGSTOP of the postmaster and every backend.
  it('primary frozen for 20 s under creates: every create answered within T + 1 s, /readyz 503 throughout, every 200 stored, ' +
    '200s within 5 s of SIGCONT', { timeout: 90_000 }, async () => {
    const pair = await startStandbyPair(bin as string)
    onTestFinished(() => pair.destroy())
    const server = await startServer({
      DATABASE_URL: pair.primary.url,
      DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      DATABASE_POOL_MAX: String(POOL_MAX)
    })
    await vi.waitFor(async () => expect(await readyStatus(server)).toBe(200), { timeout: 15000, interval: 100 })
    const dataDir = (await pair.primary.query<{ dir: string }>("SELECT current_setting('data_directory') AS dir")).rows[0]?.dir as string
    const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
    // The cluster this test started: its postmaster and the postmaster's children, nothing else.
    const cluster = (): number[] => [postmaster, ...readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).filter((pid) => {
      try {
        return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]) === postmaster
      } catch {
        return false
      }
    }).map(Number)]
    const load = startLoad(server.url, 1n)
    onTestFinished(() => load.stop())
    await vi.waitFor(() => expect(load.answers.filter((answer) => answer.status === 200).length).toBeGreaterThanOrEqual(300), { timeout: 20000, interval: 20 })

    const frozen = performance.now()
    const ready: Array<{ t: number, status: number }> = []
    try {
      for (const pid of cluster()) process.kill(pid, 'SIGSTOP')
      while (performance.now() - frozen < FREEZE_MS) {
        const tick = performance.now()
        ready.push({ t: Math.round(tick - frozen), status: await readyStatus(server) })
        await sleep(1000 - (performance.now() - tick))
      }
    } finally {
      for (const pid of cluster()) process.kill(pid, 'SIGCONT')
    }
    const thawed = performance.now()
    await vi.waitFor(() => expect(load.answers.filter((answer) => answer.status === 200 && answer.at >= thawed).length).toBeGreaterThanOrEqual(200),
      { timeout: 20000, interval: 50 })
    await load.stop()

    const { answers } = load
    const during = answers.filter((answer) => answer.at > frozen && answer.at - answer.ms < thawed)
    const firstBack = Math.min(...answers.filter((answer) => answer.status === 200 && answer.at >= thawed).map((answer) => answer.at)) - thawed
    console.info(`primary frozen ${FREEZE_MS / 1000} s: creates answered during it ${during.length} (200: ` +
      `${during.filter((answer) => answer.status === 200).length}), ` +
      `max create ${Math.round(Math.max(...during.map((answer) => answer.ms)))} ms; /readyz ${ready.map((sample) => sample.status).join(',')}; first ` +
        `200 ${Math.round(firstBack)} ms after SIGCONT`)
    expect(answers.filter((answer) => answer.status !== 200 && answer.status !== 503)).toEqual([])
    expect(answers.filter((answer) => answer.ms > STATEMENT_TIMEOUT_MS + 1000).map((answer) => Math.round(answer.ms))).toEqual([])
    expect(ready.filter((sample) => sample.t > STATEMENT_TIMEOUT_MS + 1000 && sample.status !== 503)).toEqual([])
    const thawContext = `answers after SIGCONT (at, ms, status, message): ${JSON.stringify(answers.filter((answer) => answer.at >= thawed).slice(0, 40)
      .map((answer) => [Math.round(answer.at - thawed), Math.round(answer.ms), answer.status, answer.message]))}\n${pair.logs().slice(-2000)}\n--- service\n` +
      server.stdout.filter((line) => !line.includes('"request completed"')).slice(-20).join('\n')
    expect(firstBack, thawContext).toBeLessThan(5000)
    const acknowledged = answers.filter((answer) => answer.status === 200).map((answer) => String(answer.id))
    const { rows } = await pair.primary.query<{ count: string }>('SELECT count(*)::text AS count FROM plants WHERE id = ANY ($1::int8[])', [acknowledged])
    expect(Number(rows[0]?.count), 'acknowledged plants stored').toBe(acknowledged.length)
  })
})
