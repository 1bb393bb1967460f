import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createSwitchableProxy, createTestSchemas, type TestSchemas } from '../plants/postgres-test-schemas.js'
import { createUntilKilled, get, mapConcurrently, postPlant, startServer } from './storage-process.js'

const url = process.env.TEST_DATABASE_URL
const required = process.env.REQUIRE_POSTGRES === '1'

if (url === undefined && required) {
  describe('built server on PostgreSQL', () => {
    it('runs: REQUIRE_POSTGRES=1 turns the skip into a failure', () => {
      expect.fail('REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set: the PostgreSQL end-to-end tests would be skipped')
    })
  })
}

const schemaOf = (connectionString: string): string => new URL(connectionString).searchParams.get('options')?.split('=')[1] ?? ''

describe.skipIf(url === undefined)(url === undefined ? 'PostgreSQL end-to-end tests skipped: TEST_DATABASE_URL is not set' : 'built server on PostgreSQL', () => {
  let schemas: TestSchemas
  beforeAll(() => {
    schemas = createTestSchemas(url as string)
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
    const stored = await schemas.query<{ id: string, name: string }>(`SELECT id::text AS id, name FROM ${schemaOf(env.DATABASE_URL)}.plants`)
    expect(stored.rows).toHaveLength(ids.length)
    const names = new Map(stored.rows.map((row) => [row.id, row.name]))
    const inconsistent = ids.filter((id, i) => {
      const name = names.get(String(id))
      return fromA[i] !== (name === `a ${id}` ? 200 : 409) || fromB[i] !== (name === `b ${id}` ? 200 : 409)
    })
    expect(inconsistent).toEqual([])
  })

  it('stays up when the database is unreachable at start: /livez 200, /readyz and POST 503 with Retry-After', async () => {
    const server = await startServer({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test' })
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

  it('becomes ready by itself when the database comes up after the start', async () => {
    const target = new URL(url as string)
    const proxy = await createSwitchableProxy({ host: target.hostname, port: Number(target.port || 5432) })
    const databaseUrl = new URL(await schemas.create())
    databaseUrl.host = `127.0.0.1:${proxy.port}`
    const server = await startServer({ DATABASE_URL: databaseUrl.toString() })
    try {
      expect((await get(server.url, '/readyz')).status).toBe(503)
      await proxy.up()
      await vi.waitFor(async () => expect((await get(server.url, '/readyz')).status).toBe(200), { timeout: 15000, interval: 100 })
      expect((await postPlant(server.url, 1n, 'fern')).status).toBe(200)
    } finally {
      await proxy.down()
    }
  })
})
