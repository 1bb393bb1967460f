import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { createPlantClient, PlantStoreError, type NewPlant, type Plant, type PlantClientOptions } from '../../client/src/index.js'
import type { ServerProcess } from '../e2e/server-process.js'
import { E2E_TOKEN, startServer } from '../e2e/storage-process.js'
import { byBody, recordingFetch, statusCounts } from './recorder.js'

// plant-store-client against the built service (dist/: `npm run build` first) with the faults it is
// made for: kill -9 restarts, overload shedding, a rate limit; then int64 extremes and what it refuses.

const dir = mkdtempSync(join(tmpdir(), 'plant-store-client-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const clientOf = (server: ServerProcess, options: Partial<PlantClientOptions> = {}) =>
  createPlantClient({ baseUrl: server.url, token: E2E_TOKEN, ...options })

const plantOf = ({ name, tag }: NewPlant): Plant => ({ name, ...(tag !== undefined && { tag }) })

/** The JSON text of any value, bigints as their digits: what a caller would send without the client. */
const jsonOf = (value: unknown): string =>
  JSON.stringify(value, (_key, item: unknown) => typeof item === 'bigint' ? `bigint:${item}` : item).replace(/"bigint:(-?\d+)"/g, '$1')

describe('plant-store-client against the built service', () => {
  it('restarts: 8 clients create 20,000 plants while the SQLite store\'s service is killed (kill -9) and restarted 3 times: every create resolves, the store holds exactly those plants, 0 conflicts', { timeout: 300000 }, async () => {
    const file = join(dir, 'restarts.db')
    const env = { DATABASE_URL: `sqlite:${file}` }
    let server = await startServer(env)
    // The restarted process listens where the first did, as under a supervisor: the clients keep their baseUrl.
    const sameAddress = { ...env, PORT: String(server.port) }
    const TOTAL = 20000
    const CLIENTS = 8
    // Small ids and ids past 2^53; a tag on two plants in three.
    const plants: NewPlant[] = Array.from({ length: TOTAL }, (_, n) => ({
      id: n % 2 === 0 ? n : 2n ** 62n + BigInt(n), name: `plant ${n}`, ...(n % 3 !== 0 && { tag: `tag ${n % 7}` })
    }))
    const { fetch, exchanges } = recordingFetch()
    let resolved = 0
    const writers = Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
      // Each writer is its own client, with the default retry settings.
      const client = clientOf(server, { fetch })
      for (let n = c; n < TOTAL; n += CLIENTS) {
        const plant = plants[n] as NewPlant
        expect(await client.create(plant)).toEqual(plantOf(plant))
        resolved++
      }
    }))
    writers.catch(() => {}) // awaited below, after the restarts
    for (const at of [5000, 10000, 15000]) {
      // A writer's failure ends the wait at once.
      await Promise.race([writers, vi.waitFor(() => expect(resolved).toBeGreaterThanOrEqual(at), { timeout: 120000, interval: 5 })])
      server.child.kill('SIGKILL')
      expect((await server.exited).signal).toBe('SIGKILL')
      server = await startServer(sameAddress)
    }
    await writers
    expect(resolved).toBe(TOTAL)

    const counts = statusCounts(exchanges)
    console.info(`restarts: ${TOTAL} creates in ${exchanges.length} requests, replies ${JSON.stringify(counts)}`)
    expect(counts['409']).toBeUndefined()
    // The kills came with requests in flight, and the client's retries carried them through.
    expect(counts.none).toBeGreaterThanOrEqual(3)

    server.child.kill('SIGTERM')
    expect(await server.exited).toEqual({ code: 0, signal: null })
    const db = new Database(file, { readonly: true })
    try {
      const rows = db.prepare('SELECT id, name, tag FROM plants ORDER BY id').safeIntegers().all() as Array<{ id: bigint, name: string, tag: string | null }>
      const stored = rows.map(({ id, name, tag }) => ({ id: jsonOf(id), name, tag }))
      const sent = plants.map(({ id, name, tag }) => ({ id: jsonOf(BigInt(id)), name, tag: tag ?? null }))
        .sort((a, b) => BigInt(a.id) < BigInt(b.id) ? -1 : 1)
      expect(stored.length).toBe(TOTAL)
      expect(stored).toEqual(sent)
    } finally {
      db.close()
    }
  })

  it('overload: with MAX_EVENT_LOOP_DELAY_MS=5 and 200 clients for 20 s, every create resolves or ends unavailable within its deadline; none is a conflict', { timeout: 120000 }, async () => {
    const server = await startServer({ MAX_EVENT_LOOP_DELAY_MS: '5' })
    const DEADLINE_MS = 5000
    const { fetch, exchanges } = recordingFetch()
    const outcomes: Array<{ ms: number, kind: string }> = []
    let next = 1
    const until = performance.now() + 20000
    await Promise.all(Array.from({ length: 200 }, async () => {
      const client = clientOf(server, { fetch, retry: { deadlineMs: DEADLINE_MS } })
      while (performance.now() < until) {
        const id = next++
        // A name of 4 KB: parsing and logging bodies is the load that lags the service's event loop.
        const plant = { id, name: `${id} ${'x'.repeat(4000)}` }
        const started = performance.now()
        try {
          expect(await client.create(plant)).toEqual({ name: plant.name })
          outcomes.push({ ms: performance.now() - started, kind: 'stored' })
        } catch (error) {
          if (!(error instanceof PlantStoreError)) throw error
          outcomes.push({ ms: performance.now() - started, kind: error.kind })
        }
      }
    }))
    const counts = statusCounts(exchanges)
    const kinds = Object.groupBy(outcomes, (outcome) => outcome.kind)
    console.info(`overload: ${outcomes.length} creates (${kinds.stored?.length ?? 0} stored, ${kinds.unavailable?.length ?? 0} unavailable) ` +
      `in ${exchanges.length} requests, replies ${JSON.stringify(counts)}`)
    expect(Object.keys(kinds).sort()).toEqual(['stored', 'unavailable'])
    expect(counts['409']).toBeUndefined()
    // The service did shed (503 overloaded) and did serve.
    expect(exchanges.some((exchange) => exchange.message === 'the service is overloaded, retry later')).toBe(true)
    // The deadline holds, give or take this process's own timers, late under the load it generates.
    expect(Math.max(...outcomes.map((outcome) => outcome.ms))).toBeLessThan(DEADLINE_MS + 1000)
  })

  it('rate limit: with RATE_LIMIT_PER_MINUTE=20, 4 clients create 40 plants; no retry comes sooner than the Retry-After it answers, and every create resolves', { timeout: 180000 }, async () => {
    const server = await startServer({ RATE_LIMIT_PER_MINUTE: '20' })
    const { fetch, exchanges } = recordingFetch()
    // A rate limit's Retry-After is up to a minute: the cap and the deadline must allow for it.
    const retry = { maxRetryAfterMs: 61000, deadlineMs: 150000 }
    await Promise.all(Array.from({ length: 4 }, async (_, c) => {
      const client = clientOf(server, { fetch, retry })
      for (let n = c; n < 40; n += 4) expect(await client.create({ id: n, name: `plant ${n}` })).toEqual({ name: `plant ${n}` })
    }))
    const limited = exchanges.filter((exchange) => exchange.status === 429)
    expect(limited.length).toBeGreaterThanOrEqual(4)
    for (const attempts of byBody(exchanges).values()) {
      attempts.slice(1).forEach((retried, i) => {
        const answered = attempts[i]
        if (answered?.status !== 429) return
        expect(Number(answered.retryAfter)).toBeGreaterThan(0)
        expect(retried.sentAt - answered.endedAt).toBeGreaterThanOrEqual(Number(answered.retryAfter) * 1000)
      })
    }
    expect(statusCounts(exchanges)['200']).toBe(40)
  })

  it('int64: 9223372036854775807n and -9223372036854775808n round-trip exactly, and 2^53 + 1 is not 2^53', async () => {
    const server = await startServer({})
    const client = clientOf(server)
    for (const id of [9223372036854775807n, -9223372036854775808n]) {
      expect(await client.create({ id, name: `extreme ${id}` })).toEqual({ name: `extreme ${id}` })
      expect(await client.create({ id, name: `extreme ${id}` })).toEqual({ name: `extreme ${id}` })
      // The service names the id it holds: the exact digits sent.
      const error = await client.create({ id, name: 'another' }).catch((error: unknown) => error)
      expect(error).toMatchObject({ kind: 'conflict', status: 409, error: 409, message: `a plant with id ${id} already exists with another name or tag` })
    }
    expect(await client.create({ id: 9007199254740993n, name: 'odd' })).toEqual({ name: 'odd' })
    expect(await client.create({ id: 9007199254740992n, name: 'even' })).toEqual({ name: 'even' })
  })

  it('bad input: what the contract refuses is refused before any request, in the words of the service\'s own 400', async () => {
    const server = await startServer({})
    const { fetch, exchanges } = recordingFetch()
    const client = clientOf(server, { fetch })
    const plants: unknown[] = [
      { id: 1.5, name: 'fern' }, { id: '1', name: 'fern' }, { name: 'fern' }, { id: 1 }, { id: 2n ** 63n, name: 'fern' },
      { id: -(2n ** 63n) - 1n, name: 'fern' }, { id: 1, name: 7 }, { id: 1, name: 'fern', tag: null }, { id: 1, name: 'a\u0000b' },
      { id: 1, name: 'fern', tag: 'x\uDC00' }, [{ id: 1, name: 'fern' }], null, 'fern'
    ]
    for (const plant of plants) {
      const refused = await client.create(plant as NewPlant).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(PlantStoreError)
      const response = await globalThis.fetch(`${server.url}/plants`, {
        method: 'POST', headers: { authorization: `Bearer ${E2E_TOKEN}`, 'content-type': 'application/json' }, body: jsonOf(plant)
      })
      const service = await response.json() as { message: string }
      expect({ status: response.status, message: service.message }, jsonOf(plant)).toEqual({ status: 400, message: (refused as PlantStoreError).message })
      expect(refused).toMatchObject({ kind: 'invalid', status: 400, error: 400, attempts: 0 })
    }
    expect(exchanges).toEqual([])
  })
})
