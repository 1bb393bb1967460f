import { randomBytes } from 'node:crypto'
import { createServer, type AddressInfo } from 'node:net'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest'
import { StoreOutcomeUnknownError, StoreUnavailableError, WritesFailingError } from '../../src/errors.js'
import type { InsertOutcome } from '../../src/plants/plant-repository.js'
import { createPostgresPlantRepository } from '../../src/plants/postgres-plant-repository.js'
import { repositoryContract } from './repository-contract.js'
import { createSwitchableProxy, postgresTargets, requiredButMissing, type PostgresTarget, type TestSchemas } from './postgres-test-schemas.js'
import { freePort } from '../helpers.js'

/** How long a successful probe or create keeps the store ready without another (the store's FRESH_MS). */
const FRESH_MS = 1000

for (const message of requiredButMissing()) {
  describe('PostgreSQL store', () => {
    it('runs: REQUIRE_POSTGRES=1 / REQUIRE_PGBOUNCER=1 turn a skip into a failure', () => {
      expect.fail(message)
    })
  })
}

for (const target of postgresTargets()) {
  if (target.skip !== undefined) {
    // The file-level summary only says "skipped": say why where a person reads the run.
    console.warn(`PostgreSQL tests (${target.name}) skipped: ${target.skip} (CI sets REQUIRE_POSTGRES=1 and REQUIRE_PGBOUNCER=1)`)
  }
  describe.skipIf(target.skip !== undefined)(target.skip !== undefined
    ? `PostgreSQL tests (${target.name}) skipped: ${target.skip}`
    : `PostgreSQL store, ${target.name}`, () => {
    defineSuite(target)
  })
}

/**
 * Another session, straight to the server unless told where, that runs `statement` in a transaction and keeps it
 * open (holding its locks, and through PgBouncer its server) until the test rolls it back or ends.
 */
async function holdOpen (statement: string, connectionString = process.env.TEST_DATABASE_URL): Promise<pg.Client> {
  const holder = new pg.Client({ connectionString })
  holder.on('error', () => {})
  await holder.connect()
  onTestFinished(() => holder.end())
  await holder.query('BEGIN')
  await holder.query(statement)
  return holder
}

function defineSuite (target: PostgresTarget): void {
  let schemas: TestSchemas
  beforeAll(async () => {
    schemas = await target.open()
  })
  afterAll(() => schemas.dropAll())

  repositoryContract(`postgres, ${target.name}`, async () => createPostgresPlantRepository(await schemas.create()))
  // Its schema step is bounded by a short statement timeout too, which a loaded machine can exceed: asked again, as a probe would.
  const untilReady = (store: { ready: () => Promise<void> }) => vi.waitFor(() => store.ready(), { timeout: 10000, interval: 50 })
  /** A ready store with a 300 ms statement timeout, and another session holding its plants table locked. */
  async function storeWithPlantsLocked () {
    const connectionString = await schemas.create()
    const store = createPostgresPlantRepository(connectionString, { DATABASE_STATEMENT_TIMEOUT_MS: 300 })
    onTestFinished(() => store.close())
    await untilReady(store)
    const holder = await holdOpen(`LOCK TABLE ${schemas.schemaOf(connectionString)}.plants IN ACCESS EXCLUSIVE MODE`)
    return { connectionString, store, holder }
  }

  /** A switchable proxy to `to` (the test server by default), down when the test ends; up unless told otherwise. */
  async function proxyToServer ({ up = true, to = process.env.TEST_DATABASE_URL as string | URL } = {}) {
    const server = new URL(to)
    const proxy = await createSwitchableProxy({ host: server.hostname, port: Number(server.port || 5432) })
    onTestFinished(() => proxy.down())
    if (up) await proxy.up()
    return proxy
  }

  function open (connectionString: string) {
    const store = createPostgresPlantRepository(connectionString)
    onTestFinished(() => store.close())
    return store
  }

  if (target.name === 'direct') {
    it('never becomes ready on a server older than PostgreSQL 13, and names its version', async () => {
      const url = new URL(await schemas.create())
      const schema = schemas.schemaOf(url.toString())
      // Ahead of pg_catalog on the search path, this current_setting() answers as a 12.22 server would.
      await schemas.query(`CREATE FUNCTION ${schema}.current_setting(text) RETURNS text LANGUAGE sql AS $$
        SELECT CASE $1 WHEN 'server_version_num' THEN '120022' WHEN 'server_version' THEN '12.22'
          ELSE pg_catalog.current_setting($1) END $$`)
      url.searchParams.set('options', `-c search_path=${schema},pg_catalog`)
      const store = open(url.toString())
      await expect(store.ready()).rejects.toBeInstanceOf(StoreUnavailableError)
      await expect(store.ready()).rejects.toHaveProperty('cause.message', 'PostgreSQL 13 or later is needed; the server is 12.22')
      await expect(store.insert(1, { name: 'fern' })).rejects.toBeInstanceOf(StoreUnavailableError)
    })

    it('answers StoreUnavailableError for a read-only server (25006), and does not keep that connection', async () => {
      const connectionString = await schemas.create()
      const writer = open(connectionString)
      await writer.ready()
      const readOnly = new URL(connectionString)
      const name = `plant-store-read-only-${process.pid}`
      readOnly.searchParams.set('options', `${readOnly.searchParams.get('options') ?? ''} -c default_transaction_read_only=on`)
      readOnly.searchParams.set('application_name', name)
      const store = open(readOnly.toString())
      // Its schema is up to date: a replica on a read-only server starts, says it is not ready (its
      // probe finds the server read-only), and its creates are refused.
      await expect(store.ready()).rejects.toBeInstanceOf(WritesFailingError)
      const refused = store.insert(1, { name: 'fern' })
      await expect(refused).rejects.toBeInstanceOf(StoreUnavailableError)
      await expect(refused).rejects.toHaveProperty('cause.code', '25006')
      await vi.waitFor(async () => {
        expect((await schemas.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [name])).rowCount).toBe(0)
      }, { timeout: 5000, interval: 50 })
      expect(await writer.insert(1, { name: 'fern' })).toBe('created')
    })
  }

  it('keeps every plant across close and reopen', async () => {
    const connectionString = await schemas.create()
    const first = createPostgresPlantRepository(connectionString)
    await first.ready()
    expect(await first.insert(-(2n ** 63n), { name: 'min', tag: 't' })).toBe('created')
    await first.close()
    const second = open(connectionString)
    expect(await second.insert(-(2n ** 63n), { name: 'min', tag: 't' })).toBe('same')
    expect(await second.insert(-(2n ** 63n), { name: 'min' })).toBe('conflict')
  })

  it('migrates once when several replicas start at once, with the columns of the issue', async () => {
    const connectionString = await schemas.create()
    const stores = Array.from({ length: 6 }, () => open(connectionString))
    await Promise.all(stores.map((store) => store.ready()))
    const schema = schemas.schemaOf(connectionString)
    // Step 2 (a table added) is compatible: a release that knows only 1 may run on version 2.
    const versions = await schemas.query(`SELECT version, runs_on FROM ${schema}.plant_store_migrations ORDER BY version`)
    expect(versions.rows).toEqual([{ version: 1, runs_on: 1 }, { version: 2, runs_on: 1 }])
    const columns = await schemas.query(
      'SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = $1 AND table_name = \'plants\' ORDER BY ' +
        'ordinal_position',
      [schema])
    expect(columns.rows).toEqual([
      { column_name: 'id', data_type: 'bigint', is_nullable: 'NO' },
      { column_name: 'name', data_type: 'text', is_nullable: 'NO' },
      { column_name: 'tag', data_type: 'text', is_nullable: 'YES' },
      { column_name: 'created_at', data_type: 'timestamp with time zone', is_nullable: 'NO' }
    ])
  })

  /** A schema this release made, then carrying a later release's step 3 (a table added), recorded as that release would. */
  async function withLaterStep (runsOn: number): Promise<string> {
    const connectionString = await schemas.create()
    await open(connectionString).ready()
    const schema = schemas.schemaOf(connectionString)
    await schemas.query(`CREATE TABLE ${schema}.plant_notes (id bigint PRIMARY KEY)`)
    await schemas.query(`INSERT INTO ${schema}.plant_store_migrations (version, runs_on) VALUES (3, $1)`, [runsOn])
    return connectionString
  }

  it('starts and serves on a schema a later release extended with a compatible step (a rollback)', async () => {
    const store = open(await withLaterStep(1))
    await store.ready()
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
    expect(await store.insert(1, { name: 'fern' })).toBe('same')
  })

  it('refuses to start, naming both versions, on a schema whose later step is not compatible', async () => {
    const store = open(await withLaterStep(3))
    const message = 'schema version 3 needs a release that knows version 3 or later; this one knows 2'
    await expect(store.ready()).rejects.toHaveProperty('cause.message', message)
    await expect(store.insert(1, { name: 'fern' })).rejects.toBeInstanceOf(StoreUnavailableError)
  })

  it('keeps the stored form that had no floor: its rows and plants stay, the column is added, and serves', async () => {
    const connectionString = await schemas.create()
    const schema = schemas.schemaOf(connectionString)
    // Made by the store's own role, as an earlier release did: the role that owns the table may alter it.
    const earlier = new pg.Client({ connectionString })
    await earlier.connect()
    await earlier.query(`CREATE TABLE plant_store_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
      CREATE TABLE plants (id bigint PRIMARY KEY, name text NOT NULL, tag text, created_at timestamptz NOT NULL DEFAULT now());
      CREATE TABLE plant_store_heartbeat (id boolean PRIMARY KEY DEFAULT true CHECK (id), written_at timestamptz NOT NULL);
      INSERT INTO plant_store_migrations (version, applied_at) VALUES (1, '2026-11-01Z'), (2, '2026-11-02Z');
      INSERT INTO plants (id, name) VALUES (7, 'fern')`)
    await earlier.end()
    const store = open(connectionString)
    await store.ready()
    expect(await store.insert(7, { name: 'fern' })).toBe('same')
    const rows = await schemas.query(`SELECT version, applied_at::date::text AS day, runs_on FROM ${schema}.plant_store_migrations ORDER BY version`)
    expect(rows.rows).toEqual([{ version: 1, day: '2026-11-01', runs_on: null }, { version: 2, day: '2026-11-02', runs_on: null }])
  })

  it('gives each id exactly one winner when two replicas create the same ids at once, in opposite orders', async () => {
    const connectionString = await schemas.create()
    const a = open(connectionString)
    const b = open(connectionString)
    await Promise.all([a.ready(), b.ready()])
    const ids = Array.from({ length: 400 }, (_, i) => BigInt(i) * 1000003n - 200n)
    const [fromA, fromB] = await Promise.all([
      Promise.all(ids.map((id) => a.insert(id, { name: `a${id}` }))),
      Promise.all([...ids].reverse().map((id) => b.insert(id, { name: `b${id}` }))).then((outcomes) => outcomes.reverse())
    ])
    const stored = await schemas.query<{ id: string, name: string }>(
      `SELECT id::text AS id, name FROM ${schemas.schemaOf(connectionString)}.plants`)
    const names = new Map(stored.rows.map((row) => [row.id, row.name]))
    expect(names.size).toBe(ids.length)
    ids.forEach((id, i) => {
      const winner = names.get(String(id))
      const expected = (name: string): InsertOutcome => winner === name ? 'created' : 'conflict'
      expect([fromA[i], fromB[i]]).toEqual([expected(`a${id}`), expected(`b${id}`)])
    })
  })

  it('starts when the database is down: ready() and inserts reject with StoreUnavailableError', async () => {
    const store = open(new URL(await schemas.create({ port: await freePort() })).toString())
    await expect(store.ready()).rejects.toBeInstanceOf(StoreUnavailableError)
    await expect(store.insert(1, { name: 'fern' })).rejects.toBeInstanceOf(StoreUnavailableError)
  })

  it('becomes ready by itself when the database comes up, and recovers after losing it while running', async () => {
    const proxy = await proxyToServer({ up: false })
    const store = open(await schemas.create({ port: proxy.port }))
    await expect(store.ready()).rejects.toBeInstanceOf(StoreUnavailableError)

    await proxy.up()
    await vi.waitFor(() => store.ready(), { timeout: 15000, interval: 100 })
    expect(await store.insert(1, { name: 'fern' })).toBe('created')

    await proxy.down()
    // Sent on a connection the pool has not yet seen cut, the insert's outcome is unknown to the store.
    const lost = await store.insert(2, { name: 'moss' }).then(() => undefined, (error: unknown) => error)
    expect(lost).toSatisfy((error) => error instanceof StoreUnavailableError || error instanceof StoreOutcomeUnknownError)
    // Its probe finds no connection (unavailable), or one the pool has not yet seen cut (writes failing).
    await expect(store.ready()).rejects.toSatisfy((error) => error instanceof StoreUnavailableError || error instanceof WritesFailingError)

    await proxy.up()
    await vi.waitFor(() => store.ready(), { timeout: 15000, interval: 100 })
    // Unknown: the server (or the pooler behind the proxy) may have stored it after all.
    expect(await store.insert(2, { name: 'moss' })).toEqual(lost instanceof StoreOutcomeUnknownError ? expect.stringMatching(/^(?:created|same)$/) : 'created')
    expect(await store.insert(1, { name: 'fern' })).toBe('same')
  })

  it('survives the server terminating its connections (57P01): the next inserts succeed, and each kind of error is logged once', async () => {
    const connectionString = new URL(await schemas.create())
    const name = `plants-test-terminate-${process.pid}`
    connectionString.searchParams.set('application_name', name)
    const warnings: Array<{ cause?: { code?: string, message: string } }> = []
    const log = { info: () => {}, warn: (fields: object) => { warnings.push(fields) } }
    const store = createPostgresPlantRepository(connectionString.toString(), { log })
    onTestFinished(() => store.close())
    for (const round of [1, 2]) {
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.insert(i, { name: 'fern' })))
      const terminated = await schemas.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [name])
      expect(terminated.rowCount).toBeGreaterThan(0)
      // The pool's idle connections read the server's FATAL 57P01 as an error event; waited for before an insert
      // takes one of them, which would read it as its statement's failure instead (a loaded machine's order).
      if (target.name === 'direct' && round === 1) {
        await vi.waitFor(() => expect(warnings.map(({ cause }) => cause?.code)).toContain('57P01'), { timeout: 10000, interval: 50 })
      }
      // A connection the pool has not yet seen die may fail one attempt with 503; then the pool has a new one.
      await vi.waitFor(async () => expect(await store.insert(100 + round, { name: 'moss' })).toBe('created'), { timeout: 10000, interval: 50 })
    }
    expect(await store.insert(1, { name: 'fern' })).toBe('same')
    await store.ready()
    const kinds = warnings.map(({ cause }) => cause?.code ?? cause?.message)
    // Through PgBouncer the store's own connections stay up: only the pooler's server connections end.
    if (target.name === 'direct') expect(kinds).toContain('57P01')
    expect(kinds).toEqual([...new Set(kinds)])
  })

  it('rejects inserts after close with StoreUnavailableError', async () => {
    const store = createPostgresPlantRepository(await schemas.create())
    await store.ready()
    await store.close()
    await expect(store.insert(1, { name: 'fern' })).rejects.toBeInstanceOf(StoreUnavailableError)
  })

  // A batch's values travel as parameters, one array per column (postgres-plant-repository.ts, run).
  it('stores texts that read as SQL or as array syntax exactly, in one batch, and runs none of them', async () => {
    const connectionString = await schemas.create()
    const store = open(connectionString)
    await store.ready()
    const sizes: number[] = []
    store.observe?.({ batch: (size) => sizes.push(size) })
    const texts = [
      "'); DROP TABLE plants; --",
      "O'Brien''s \\' fern \\\\ \\",
      "E'\\x41' $$ dollar $$ $q$ quoted $q$",
      '/* comment */ -- line comment',
      "\\'; SELECT pg_sleep(10); --",
      'NULL',
      '{"a",b}, "} \\" ,NULL'
    ]
    const outcomes = await Promise.all(texts.map((text, i) => store.insert(i + 1, { name: text, tag: text })))
    expect(sizes).toEqual([texts.length])
    expect(outcomes).toEqual(texts.map(() => 'created'))
    const { rows } = await schemas.query(`SELECT id::text AS id, name, tag FROM ${schemas.schemaOf(connectionString)}.plants ORDER BY id`)
    expect(rows).toEqual(texts.map((text, i) => ({ id: String(i + 1), name: text, tag: text })))
    expect(await Promise.all(texts.map((text, i) => store.insert(i + 1, { name: text, tag: text })))).toEqual(texts.map(() => 'same'))
  })

  // Through PgBouncer in transaction mode, each statement may reach another server: one that never saw the store's
  // statements, or one that has just run another replica's. Unnamed statements need nothing from either.
  it('stores plants whose statements reach a server that never saw them, or one another replica has just used', async () => {
    const connectionString = await schemas.create()
    const store = createPostgresPlantRepository(connectionString, { DATABASE_POOL_MAX: 1 })
    onTestFinished(() => store.close())
    await store.ready()
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
    // Another replica's first insert: through PgBouncer, on the server the first store has just used.
    const replica = createPostgresPlantRepository(connectionString, { DATABASE_POOL_MAX: 1 })
    onTestFinished(() => replica.close())
    await replica.ready()
    expect(await replica.insert(5, { name: 'palm' })).toBe('created')
    // Through PgBouncer this connection gets the server the insert just used (its idle servers are reused last first)
    // and keeps it, so the store's next statement goes to another server.
    await holdOpen('SELECT 1', connectionString)
    expect(await store.insert(2, { name: 'ivy' })).toBe('created')
    expect(await Promise.all([store.insert(1, { name: 'fern' }), store.insert(3, { name: 'moss' })])).toEqual(['same', 'created'])
    expect(await store.insert(2, { name: 'oak' })).toBe('conflict')
  })

  it('refuses a batch holding a NUL character whole, with nothing stored (validation stops NUL before the store)', async () => {
    const connectionString = await schemas.create()
    const store = open(connectionString)
    await store.ready()
    const outcomes = await Promise.allSettled([store.insert(1, { name: 'a\0b' }), store.insert(2, { name: 'fern' })])
    expect(outcomes.map((outcome) => outcome.status === 'rejected' && outcome.reason instanceof StoreUnavailableError)).toEqual([true, true])
    expect((await schemas.query(`SELECT count(*)::int AS n FROM ${schemas.schemaOf(connectionString)}.plants`)).rows).toEqual([{ n: 0 }])
    expect(await store.insert(2, { name: 'fern' })).toBe('created')
  })

  it('stores nothing of a batch whose insert times out (one implicit transaction), and the next batch is stored', { timeout: 20000 }, async () => {
    const connectionString = await schemas.create()
    const store = createPostgresPlantRepository(connectionString, { DATABASE_STATEMENT_TIMEOUT_MS: 300 })
    onTestFinished(() => store.close())
    await untilReady(store)
    const table = `${schemas.schemaOf(connectionString)}.plants`
    // Another session (straight to the server) holds id 2 uncommitted: the batch waits for that row's lock.
    const holder = await holdOpen(`INSERT INTO ${table} (id, name) VALUES (2, 'held')`)
    const outcomes = await Promise.allSettled([1, 2, 3].map((id) => store.insert(id, { name: 'fern' })))
    for (const outcome of outcomes) expect(outcome).toMatchObject({ status: 'rejected', reason: expect.any(StoreUnavailableError) })
    expect((outcomes[0] as PromiseRejectedResult).reason.cause).toMatchObject({ code: '57014' })
    await holder.query('ROLLBACK')
    expect((await schemas.query(`SELECT count(*)::int AS n FROM ${table}`)).rows).toEqual([{ n: 0 }])
    expect(await Promise.all([1, 2, 3].map((id) => store.insert(id, { name: 'fern' })))).toEqual(['created', 'created', 'created'])
  })

  it('answers StoreOutcomeUnknownError when the connection is lost after the batch was sent, and that plant can be stored', { timeout: 30000 }, async () => {
    const proxy = await proxyToServer()
    const connectionString = await schemas.create({ port: proxy.port })
    const store = open(connectionString)
    await store.ready()
    const table = `${schemas.schemaOf(connectionString)}.plants`
    // Another session (straight to the server) holds id 2 uncommitted: the batch waits on the server.
    const holder = await holdOpen(`INSERT INTO ${table} (id, name) VALUES (2, 'held')`)
    const name = `lost-${process.pid}-${Date.now()}`
    const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid
    const insert = store.insert(2, { name })
    // The batch waits on the server for the row the holder keeps.
    await vi.waitFor(async () => {
      const blocked = await schemas.query('SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))', [holderPid])
      expect(blocked.rowCount).toBe(1)
    }, { timeout: 5000, interval: 20 })
    await proxy.down()
    await expect(insert).rejects.toBeInstanceOf(StoreOutcomeUnknownError)
    // The server still runs the insert: once the lock is free, it commits what the client was never told.
    await holder.query('ROLLBACK')
    await vi.waitFor(async () => {
      expect((await schemas.query(`SELECT name FROM ${table} WHERE id = 2`)).rows).toEqual([{ name }])
    }, { timeout: 5000, interval: 50 })
    await proxy.up()
    await vi.waitFor(async () => expect(await store.insert(2, { name })).toBe('same'), { timeout: 15000, interval: 100 })
  })

  it('finds the writable host again after the one in use is lost, without a restart (multi-host URL)', { timeout: 30000 }, async () => {
    const url = new URL(await schemas.create())
    // Two ways to the same server (or pooler): two hosts as far as the store can tell.
    const first = await proxyToServer({ to: url })
    const second = await proxyToServer({ to: url })
    const dead = await freePort()
    url.searchParams.set('target_session_attrs', 'read-write')
    // A host that refuses, then two that reach the server: tried in that order.
    const store = open(url.toString().replace(`@${url.host}/`, `@127.0.0.1:${dead},127.0.0.1:${first.port},127.0.0.1:${second.port}/`))
    await vi.waitFor(() => store.ready(), { timeout: 10000, interval: 50 })
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
    await first.down()
    await vi.waitFor(async () => expect(await store.insert(2, { name: 'moss' })).toBe('created'), { timeout: 10000, interval: 50 })
    expect(await store.insert(1, { name: 'fern' })).toBe('same')
  })

  it('skips hosts that accept connections and never answer, all within one connect timeout (multi-host URL)', { timeout: 30000 }, async () => {
    // Listeners that take the connection and say nothing, as hosts behind a dead route can.
    const silent = await Promise.all([1, 2, 3].map(async () => {
      const server = createServer(() => {})
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      onTestFinished(() => { server.close() })
      return `127.0.0.1:${(server.address() as AddressInfo).port}`
    }))
    const url = new URL(await schemas.create())
    url.searchParams.set('target_session_attrs', 'read-write')
    const statementTimeoutMs = 1000
    const hosts = url.toString().replace(`@${url.host}/`, `@${silent.join(',')},${url.host}/`)
    const store = createPostgresPlantRepository(hosts, { DATABASE_STATEMENT_TIMEOUT_MS: statementTimeoutMs })
    onTestFinished(() => store.close())
    const started = performance.now()
    await vi.waitFor(() => store.ready(), { timeout: 10000, interval: 50 })
    // One host after another would take three connect timeouts before the fourth host.
    expect(performance.now() - started).toBeLessThan(2.5 * statementTimeoutMs)
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
  })

  it('moves to the next host when the host in use stalls with connections open (its check is bounded by the connect timeout), ' +
    'and stays there while the stall lasts', { timeout: 60000 }, async () => {
    const url = new URL(await schemas.create())
    const proxy = await proxyToServer({ to: url })
    url.searchParams.set('target_session_attrs', 'read-write')
    const connectionString = url.toString()
    const hosts = connectionString.replace(`@${url.host}/`, `@127.0.0.1:${proxy.port},${url.host}/`)
    const store = createPostgresPlantRepository(hosts, { DATABASE_STATEMENT_TIMEOUT_MS: 2000, DATABASE_POOL_MAX: 2 })
    onTestFinished(() => store.close())
    await vi.waitFor(() => store.ready(), { timeout: 10000, interval: 50 })
    // Another session holds id 1 uncommitted: that batch waits, and the next one opens the host's second connection.
    const holder = await holdOpen(`INSERT INTO ${schemas.schemaOf(connectionString)}.plants (id, name) VALUES (1, 'fern')`)
    const waiting = store.insert(1, { name: 'fern' })
    await new Promise((resolve) => { setImmediate(resolve) })
    expect(await store.insert(2, { name: 'moss' })).toBe('created')
    await holder.query('COMMIT')
    expect(await waiting).toBe('same')
    // Both open and idle: once the host stalls, one is taken by an insert, the other by the host check.
    expect(store.stats?.()).toMatchObject({ poolConnections: 2, poolIdleConnections: 2 })
    proxy.freeze()
    await expect(store.insert(3, { name: 'ivy' })).rejects.toBeInstanceOf(StoreOutcomeUnknownError)
    const started = performance.now()
    await vi.waitFor(async () => expect(await store.insert(4, { name: 'sedge' })).toBe('created'), { timeout: 10000, interval: 50 })
    expect(performance.now() - started).toBeLessThan(5000)
    // The first host stays frozen for 20 s more: every insert is created on the second, none waits on the first.
    for (let id = 5, until = performance.now() + 20000; performance.now() < until; id++) {
      expect(await store.insert(id, { name: 'sedge' })).toBe('created')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })

  it('reports creates failing in ready() once they have failed longer than the statement timeout, and is ready again once writes work',
    { timeout: 30000 }, async () => {
      const { store, holder } = await storeWithPlantsLocked()
      // Each waits for the lock until the statement timeout: twice that with no success, while reads work.
      await expect(store.insert(1, { name: 'fern' })).rejects.toBeInstanceOf(StoreUnavailableError)
      await expect(store.insert(2, { name: 'fern' })).rejects.toBeInstanceOf(StoreUnavailableError)
      expect((await schemas.query('SELECT 1')).rowCount).toBe(1)
      await expect(store.ready()).rejects.toBeInstanceOf(WritesFailingError)
      await expect(store.ready()).rejects.toThrow(/^the service is not ready: creates have failed for \d+ ms with no success$/)
      await holder.query('ROLLBACK')
      // No create comes while it is not ready (a load balancer sends none): ready() itself finds out.
      await vi.waitFor(() => store.ready(), { timeout: 5000, interval: 100 })
      expect(await store.insert(1, { name: 'fern' })).toBe('created')
    })

  it('answers every insert, queued ones too, within the statement timeout T + 1 s while the server stalls, ' +
    'is not ready within T, and recovers', { timeout: 30000 }, async () => {
    const proxy = await proxyToServer()
    const statementTimeoutMs = 500
    const url = await schemas.create({ port: proxy.port })
    const store = createPostgresPlantRepository(url, { DATABASE_STATEMENT_TIMEOUT_MS: statementTimeoutMs, DATABASE_POOL_MAX: 2 })
    onTestFinished(() => store.close())
    await vi.waitFor(() => store.ready(), { timeout: 10000, interval: 50 })
    expect(await store.insert(1, { name: 'fern' })).toBe('created')

    proxy.freeze()
    // Waves of inserts: the first batches get stuck on the server, later ones queue behind them.
    const timed = async (id: number): Promise<{ ms: number, error: unknown }> => {
      const started = performance.now()
      const error = await store.insert(id, { name: 'frozen' }).then(() => undefined, (failure: unknown) => failure)
      return { ms: performance.now() - started, error }
    }
    const waves: Array<Promise<{ ms: number, error: unknown }>> = []
    for (let wave = 0; wave < 6; wave++) {
      for (let n = 0; n < 5; n++) waves.push(timed(100 + wave * 10 + n))
      await new Promise((resolve) => setTimeout(resolve, 150))
    }
    const readyStarted = performance.now()
    await expect(store.ready()).rejects.toBeInstanceOf(WritesFailingError)
    // Within T, and 300 ms for a loaded machine's timers: waiting on the probe's own deadline would take T + 600 ms.
    expect(performance.now() - readyStarted).toBeLessThanOrEqual(statementTimeoutMs + 300)
    const answers = await Promise.all(waves)
    expect(answers.filter(({ ms }) => ms > statementTimeoutMs + 1000).map(({ ms }) => Math.round(ms))).toEqual([])
    // Unsent (queued, no connection) is "nothing stored"; sent and never answered is "unknown".
    const kinds = answers.map(({ error }) =>
      error instanceof StoreUnavailableError ? 'unsent' : error instanceof StoreOutcomeUnknownError ? 'unknown' : error)
    expect(kinds.filter((kind) => kind !== 'unsent' && kind !== 'unknown')).toEqual([])
    expect(kinds).toContain('unknown')

    proxy.thaw()
    await vi.waitFor(() => store.ready(), { timeout: 5000, interval: 50 })
    expect(await store.insert(2, { name: 'moss' })).toBe('created')
  })

  if (target.name === 'direct') {
    // A DBA may revoke EXECUTE on pg_logical_emit_message, and a managed or forked server may lack it: an idle replica
    // must still become ready once writes work. In a database of its own, so that the revoke reaches no other test.
    it('becomes ready with no create, as a role that may not run pg_logical_emit_message, and probes by the heartbeat row', async () => {
      const name = `plant_store_no_emit_${randomBytes(6).toString('hex')}`
      const admin = new URL(process.env.TEST_DATABASE_URL as string)
      const run = async (text: string, connectionString = admin.toString()) => {
        const client = new pg.Client({ connectionString })
        await client.connect()
        try { return await client.query(text) } finally { await client.end() }
      }
      const asRole = new URL(admin)
      asRole.username = name
      asRole.pathname = `/${name}`
      const inOwnDatabase = new URL(admin)
      inOwnDatabase.pathname = `/${name}`
      await run(`CREATE ROLE ${name} LOGIN`)
      onTestFinished(async () => {
        await run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        await run(`DROP ROLE IF EXISTS ${name}`)
      })
      await run(`CREATE DATABASE ${name} OWNER ${name}`)
      await run('REVOKE EXECUTE ON FUNCTION pg_logical_emit_message(boolean, text, text) FROM PUBLIC', inOwnDatabase.toString())
      await expect(run('SELECT pg_logical_emit_message(true, \'x\', \'y\')', asRole.toString())).rejects.toMatchObject({ code: '42501' })

      const store = createPostgresPlantRepository(asRole.toString())
      try {
        await untilReady(store)
        expect((await run('SELECT count(*)::int AS n FROM plant_store_heartbeat', inOwnDatabase.toString())).rows).toEqual([{ n: 1 }])
        expect(await store.insert(1, { name: 'fern' })).toBe('created')
      } finally {
        await store.close()
      }
    })

    it('sends a frozen server one cancel at a time for a statement given up on, not one a second to work through when it wakes', {
      timeout: 30000
    }, async () => {
      const proxy = await proxyToServer()
      const store = createPostgresPlantRepository(await schemas.create({ port: proxy.port }), { DATABASE_STATEMENT_TIMEOUT_MS: 300, DATABASE_POOL_MAX: 1 })
      onTestFinished(() => store.close())
      await untilReady(store)
      expect(await store.insert(1, { name: 'fern' })).toBe('created')

      proxy.freeze()
      const before = proxy.accepted()
      await expect(store.insert(2, { name: 'moss' })).rejects.toBeInstanceOf(StoreOutcomeUnknownError)
      // Quarantined, the connection holds the pool's one slot: the only connections now are its cancels. Frozen past
      // its 10 s of quarantine, so through its release too.
      await new Promise((resolve) => setTimeout(resolve, 11_000))
      expect(proxy.accepted() - before).toBe(1)

      proxy.thaw()
      // A try that times out on a loaded machine may have stored it: the next one finds it, the same plant.
      await vi.waitFor(async () => expect(await store.insert(3, { name: 'ivy' })).toMatch(/^(?:created|same)$/), { timeout: 15000, interval: 100 })
    })

    it('probes readiness with one read at most per second, and none while creates succeed', { timeout: 30000 }, async () => {
      const url = new URL(await schemas.create())
      const schema = schemas.schemaOf(url.toString())
      // Ahead of pg_catalog on the search path, this has_table_privilege() counts each probe, then answers as the real one.
      url.searchParams.set('options', `-c search_path=${schema},pg_catalog`)
      const store = open(url.toString())
      await store.ready()
      await schemas.query(`CREATE TABLE ${schema}.probes (n int NOT NULL)`)
      await schemas.query(`CREATE FUNCTION ${schema}.has_table_privilege(text, text) RETURNS boolean LANGUAGE sql AS $$
        INSERT INTO ${schema}.probes VALUES (1); SELECT pg_catalog.has_table_privilege($1, $2) $$`)
      const probes = async (): Promise<number> => Number((await schemas.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${schema}.probes`)).rows[0]?.n)
      await new Promise((resolve) => setTimeout(resolve, 1100))
      // Polled 50 times, 50 ms apart, with no creates: a probe per second at most, over the time the
      // polling took (a loaded machine stretches it past 2.5 s). A probe on every call would make 50.
      const started = performance.now()
      for (let n = 0; n < 50; n++) {
        await store.ready()
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const atMost = Math.ceil((performance.now() - started) / FRESH_MS) + 1
      expect(atMost, 'the polling is dense enough to tell one probe per second from one per call').toBeLessThan(50)
      const probed = await probes()
      expect(probed).toBeGreaterThanOrEqual(1)
      expect(probed).toBeLessThanOrEqual(atMost)
      // Creates that succeed are the proof: polled between them, no probe runs.
      for (let n = 0; n < 30; n++) {
        expect(await store.insert(n, { name: 'fern' })).toBe('created')
        await store.ready()
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      expect(await probes()).toBe(probed)
    })
  }

  // A non-concurrent CREATE INDEX holds SHARE on the table: creates wait, reads do not. A probe that wrote to plants
  // would wait too, and every replica would leave the balancer at once: it writes the heartbeat row instead.
  it('stays ready while another session holds SHARE on plants (CREATE INDEX), probing by the heartbeat row', { timeout: 30000 }, async () => {
    const connectionString = await schemas.create()
    const store = createPostgresPlantRepository(connectionString, { DATABASE_STATEMENT_TIMEOUT_MS: 500 })
    onTestFinished(() => store.close())
    await untilReady(store)
    const schema = schemas.schemaOf(connectionString)
    await holdOpen(`LOCK TABLE ${schema}.plants IN SHARE MODE`)
    // Past FRESH_MS, so that this ready() probes again.
    await new Promise((resolve) => setTimeout(resolve, FRESH_MS + 100))
    await expect(store.ready()).resolves.toBeUndefined()
    expect((await schemas.query(`SELECT count(*)::int AS n FROM ${schema}.plant_store_heartbeat`)).rows).toEqual([{ n: 1 }])
  })

  it('is ready again at once when a batch succeeds after one that failed, with no probe needed', { timeout: 30000 }, async () => {
    const { connectionString, store, holder } = await storeWithPlantsLocked()
    await expect(store.insert(1, { name: 'fern' })).rejects.toBeInstanceOf(StoreUnavailableError)
    await holder.query('ROLLBACK')
    expect(await store.insert(2, { name: 'moss' })).toBe('created')
    // The table is locked against reads: a probe would wait and fail; ready() needs none after that success.
    await holdOpen(`LOCK TABLE ${schemas.schemaOf(connectionString)}.plants IN ACCESS EXCLUSIVE MODE`)
    await expect(store.ready()).resolves.toBeUndefined()
  })

  it('reports each batch\'s size to an observer, and the pool\'s connections (metrics)', async () => {
    const store = open(await schemas.create())
    await store.ready()
    const sizes: number[] = []
    store.observe?.({ batch: (size) => sizes.push(size) })
    await Promise.all([1, 2, 3].map((id) => store.insert(id, { name: 'fern' })))
    await store.insert(4, { name: 'fern' })
    expect(sizes).toEqual([3, 1])
    const stats = store.stats?.()
    expect(stats?.poolConnections).toBeGreaterThanOrEqual(1)
    expect(stats?.poolIdleConnections).toBe(stats?.poolConnections)
    expect(stats?.poolWaitingRequests).toBe(0)
  })
}
