import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest'
import { createSwitchableProxy, postgresTargets, requiredButMissing, type PostgresTarget, type TestSchemas } from '../plants/postgres-test-schemas.js'
import { startServer } from './server-process.js'
import { createUntilKilled, get, mapConcurrently, postPlant, runServerToExit } from './storage-process.js'
import { freePort } from '../helpers.js'

for (const message of requiredButMissing()) {
  describe('built server on PostgreSQL', () => {
    it('runs: REQUIRE_POSTGRES=1 / REQUIRE_PGBOUNCER=1 turn a skip into a failure', () => {
      expect.fail(message)
    })
  })
}

// No server needed: the URL is read before anything connects.
describe('built server with a PostgreSQL URL it cannot read', () => {
  it('stops the start with one line naming DATABASE_URL, never the password, and exit 1', async () => {
    const { code, stderr } = await runServerToExit({ DATABASE_URL: 'postgres://plants:hunter2/x@db1:5432,db2:5432/plants?target_session_attrs=read-write' })
    expect(code).toBe(1)
    // The unencoded / ends the authority early: what looks like the host is the user and part of the password.
    expect(stderr).toBe('plant-store: DATABASE_URL: not a valid URL at the host (percent-encode / ? # @ % in a password)\n')
  })
})

for (const target of postgresTargets()) {
  describe.skipIf(target.skip !== undefined)(target.skip !== undefined
    ? `PostgreSQL end-to-end tests (${target.name}) skipped: ${target.skip}`
    : `built server on PostgreSQL, ${target.name}`, () => {
    defineSuite(target)
  })
}

/** The server's stdout so far, in bytes. */
const stdoutBytes = (lines: readonly string[]): number => lines.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0)

function defineSuite (target: PostgresTarget): void {
  let schemas: TestSchemas
  beforeAll(async () => {
    schemas = await target.open()
  })
  afterAll(() => schemas.dropAll())

  it('keeps every plant that got a 200 through a SIGKILL under concurrent load', { timeout: 60000 }, async () => {
    const env = { DATABASE_URL: await schemas.create() }
    const first = await startServer(env)
    await vi.waitFor(async () => expect((await get(first.url, '/readyz')).status).toBe(200), { timeout: 10000, interval: 50 })
    const { acknowledged, unanswered } = await createUntilKilled(first, 600, 32, (n) => n % 2 === 0 ? BigInt(n) : -(2n ** 62n) - BigInt(n))
    expect(acknowledged.length).toBeGreaterThanOrEqual(600)
    expect(unanswered).toBeGreaterThan(0) // the kill came with requests in flight

    const second = await startServer(env)
    await vi.waitFor(async () => expect((await get(second.url, '/readyz')).status).toBe(200), { timeout: 10000, interval: 50 })
    const replays = await mapConcurrently(acknowledged, 32, async (id) => (await postPlant(second.url, id, `plant ${id}`)).status)
    expect(replays.filter((status) => status !== 200)).toEqual([])
    const changed = await mapConcurrently(acknowledged, 32, async (id) => (await postPlant(second.url, id, `other ${id}`)).status)
    expect(changed.filter((status) => status !== 409)).toEqual([])
  })

  it('stores each id once when two servers on one database are sent the same ids at once with different names', { timeout: 60000 }, async () => {
    const env = { DATABASE_URL: await schemas.create() }
    const [a, b] = await Promise.all([startServer(env), startServer(env)])
    if (a === undefined || b === undefined) throw new Error('servers did not start')
    await vi.waitFor(async () => {
      expect((await get(a.url, '/readyz')).status).toBe(200)
      expect((await get(b.url, '/readyz')).status).toBe(200)
    }, { timeout: 10000, interval: 50 })
    const ids = Array.from({ length: 600 }, (_, i) => i % 3 === 0 ? BigInt(i) : 2n ** 63n - 1n - BigInt(i))
    const [fromA, fromB] = await Promise.all([
      mapConcurrently(ids, 24, async (id) => (await postPlant(a.url, id, `a ${id}`)).status),
      mapConcurrently([...ids].reverse(), 24, async (id) => (await postPlant(b.url, id, `b ${id}`)).status).then((statuses) => statuses.reverse())
    ])
    const stored = await schemas.query<{ id: string, name: string }>(`SELECT id::text AS id, name FROM ${schemas.schemaOf(env.DATABASE_URL)}.plants`)
    expect(stored.rows).toHaveLength(ids.length)
    const names = new Map(stored.rows.map((row) => [row.id, row.name]))
    const inconsistent = ids.filter((id, i) => {
      const name = names.get(String(id))
      return fromA[i] !== (name === `a ${id}` ? 200 : 409) || fromB[i] !== (name === `b ${id}` ? 200 : 409)
    })
    expect(inconsistent).toEqual([])
  })

  it('stays up when the database is unreachable at start: /livez 200, /readyz and POST 503 with Retry-After', async () => {
    const server = await startServer({ DATABASE_URL: await schemas.create({ port: await freePort() }) })
    expect((await get(server.url, '/livez')).status).toBe(200)
    const ready = await get(server.url, '/readyz')
    expect(ready.status).toBe(503)
    expect(ready.body).toEqual({ error: 503, message: 'the service is not ready' })
    expect(ready.headers.get('retry-after')).toBe('1')
    const created = await postPlant(server.url, 1n, 'fern')
    expect(created.status).toBe(503)
    expect(created.body).toEqual({ error: 503, message: 'the plant store is unavailable, retry later' })
    expect(created.headers.get('retry-after')).toBe('1')
    expect(server.child.exitCode).toBe(null)

    server.child.kill('SIGTERM')
    expect(await server.exited).toEqual({ code: 0, signal: null })
  })

  it('becomes ready by itself when the database comes up after the start, answers 503 while it is lost, and recovers without a restart',
    { timeout: 60000 }, async () => {
      const upstream = new URL(process.env.TEST_DATABASE_URL as string)
      const proxy = await createSwitchableProxy({ host: upstream.hostname, port: Number(upstream.port || 5432) })
      onTestFinished(() => proxy.down())
      const server = await startServer({ DATABASE_URL: await schemas.create({ port: proxy.port }) })
      expect((await get(server.url, '/readyz')).status).toBe(503)
      await proxy.up()
      await vi.waitFor(async () => expect((await get(server.url, '/readyz')).status).toBe(200), { timeout: 15000, interval: 100 })
      expect((await postPlant(server.url, 1n, 'fern')).status).toBe(200)

      await proxy.down()
      const lost = await postPlant(server.url, 2n, 'moss')
      expect(lost.status).toBe(503)
      expect(lost.headers.get('retry-after')).toBe('1')
      expect((await get(server.url, '/readyz')).status).toBe(503)

      await proxy.up()
      await vi.waitFor(async () => expect((await postPlant(server.url, 2n, 'moss')).status).toBe(200), { timeout: 20000, interval: 100 })
      expect((await postPlant(server.url, 1n, 'fern')).status).toBe(200)
      await server.waitForLine((line) => line.includes('"msg":"store back"'))
    })

  it('answers 503 within the statement timeout when a lock blocks the insert, and the server cancels the statement', { timeout: 30000 }, async () => {
    const timeoutMs = 1000
    const databaseUrl = new URL(await schemas.create())
    const name = `plant-store-lock-${process.pid}-${target.name.length}`
    databaseUrl.searchParams.set('application_name', name)
    const server = await startServer({ DATABASE_URL: databaseUrl.toString(), DATABASE_STATEMENT_TIMEOUT_MS: String(timeoutMs) })
    await vi.waitFor(async () => expect((await get(server.url, '/readyz')).status).toBe(200), { timeout: 10000, interval: 50 })
    // Another session (straight to the server) holds the table, as a long migration or a stuck transaction would.
    const holder = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL })
    holder.on('error', () => {})
    await holder.connect()
    onTestFinished(() => holder.end())
    await holder.query('BEGIN')
    await holder.query(`LOCK TABLE ${schemas.schemaOf(databaseUrl.toString())}.plants IN ACCESS EXCLUSIVE MODE`)
    const started = performance.now()
    const blocked = await postPlant(server.url, 1n, 'fern')
    const elapsed = performance.now() - started
    expect(blocked.status).toBe(503)
    expect(blocked.body).toEqual({ error: 503, message: 'the plant store is unavailable, retry later' })
    expect(blocked.headers.get('retry-after')).toBe('1')
    // It waited for the lock, and was cancelled at the statement timeout: an answer never given would
    // have come as "outcome unknown", 600 ms later.
    expect(elapsed).toBeGreaterThanOrEqual(timeoutMs - 50)
    expect(elapsed).toBeLessThan(timeoutMs + 1000)
    // The server cancelled the statement (a client that only stopped waiting would leave it queued on the lock).
    const waiting = await schemas.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state = 'active' AND wait_event_type = 'Lock'", [name])
    expect(waiting.rows).toEqual([{ n: 0 }])
    // The insert's own line: on a loaded machine a schema attempt or a probe before the lock may have timed out too.
    const logged = JSON.parse(await server.waitForLine((line) => line.includes('"msg":"store failing (timeout, insert)')))
    expect(logged).toMatchObject({ failure: 'timeout', during: 'insert', failures: 1, cause: { code: '57014' } })

    await holder.query('ROLLBACK')
    expect((await postPlant(server.url, 1n, 'fern')).status).toBe(200)
  })

  it('writes at most 400 bytes of log per refused request while the database is unreachable', { timeout: 60000 }, async () => {
    const server = await startServer({ DATABASE_URL: await schemas.create({ port: await freePort() }), LOG_LEVEL: 'info' })
    const before = stdoutBytes(server.stdout)
    const count = 400
    const statuses = await mapConcurrently(Array.from({ length: count }, (_, i) => BigInt(i)), 16, async (id) => {
      const reply = await postPlant(server.url, id, 'fern')
      expect(reply.headers.get('retry-after')).toBe('1')
      return reply.status
    })
    expect(statuses.filter((status) => status !== 503)).toEqual([])
    // Every refused request still has its access line.
    await vi.waitFor(() => expect(server.stdout.filter((line) => line.includes('"status":503')).length).toBe(count), { timeout: 5000, interval: 20 })
    const perRequest = (stdoutBytes(server.stdout) - before) / count
    expect(perRequest).toBeLessThanOrEqual(400)
    // The cause is there, counted, without a stack.
    const failures = server.stdout.filter((line) => line.includes('"msg":"store failing'))
    expect(failures.length).toBeGreaterThan(0)
    expect(failures.length).toBeLessThan(count / 10)
    expect(failures.join('\n')).not.toContain('"stack"')
    expect(JSON.parse(failures[0] as string)).toMatchObject({ level: 40, subject: 'store', during: 'insert', cause: { message: expect.any(String) } })
  })
}
