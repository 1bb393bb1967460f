import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { StoreFullError, StoreOutcomeUnknownError, StoreUnavailableError, WritesFailingError } from '../../src/errors.js'
import { createMemoryPlantRepository } from '../../src/plants/memory-plant-repository.js'
import { createSqlitePlantRepository } from '../../src/plants/sqlite-plant-repository.js'
import { createObservedPlantRepository, failureKind } from '../../src/observability/observed-plant-repository.js'
import type { PlantRepository, StoreObserver, StoreStats } from '../../src/plants/plant-repository.js'
import { createMetrics } from '../../src/observability/metrics.js'
import { sampleValue } from '../helpers.js'
import { repositoryContract } from '../plants/repository-contract.js'

const silent = { warn: () => {}, info: () => {} }
const withCode = (message: string, code: string): Error => Object.assign(new Error(message), { code })

/** A store that commits in groups and has a pool, as the PostgreSQL adapter does, under test control. */
function poolStore () {
  let observer: StoreObserver | undefined
  const stats: StoreStats = { poolConnections: 4, poolIdleConnections: 1, poolWaitingRequests: 7 }
  const store: PlantRepository = {
    insert: async (id) => {
      if (id === 13) throw new StoreFullError()
      if (id === 14) throw new StoreOutcomeUnknownError()
      return 'created'
    },
    ready: async () => {},
    close: async () => {},
    stats: () => stats,
    observe: (next) => { observer = next }
  }
  return { store, stats, batch: (size: number) => observer?.batch(size) }
}

repositoryContract('memory, observed', async () => createObservedPlantRepository(createMemoryPlantRepository({ maxPlants: 1000 }), silent))

describe('createObservedPlantRepository', () => {
  it('exports the group-commit size histogram and the pool gauges, read at scrape time', async () => {
    const metrics = createMetrics()
    const fake = poolStore()
    createObservedPlantRepository(fake.store, silent, metrics)
    fake.batch(1)
    fake.batch(3)
    fake.batch(600)
    let text = await metrics.exposition.metrics()
    expect(sampleValue(text, 'plant_store_group_commit_batch_size_count')).toBe(3)
    expect(sampleValue(text, 'plant_store_group_commit_batch_size_sum')).toBe(604)
    expect(sampleValue(text, 'plant_store_group_commit_batch_size_bucket', { le: '1' })).toBe(1)
    expect(sampleValue(text, 'plant_store_group_commit_batch_size_bucket', { le: '4' })).toBe(2)
    expect(sampleValue(text, 'plant_store_group_commit_batch_size_bucket', { le: '512' })).toBe(2)
    expect(sampleValue(text, 'plant_store_group_commit_batch_size_bucket', { le: '1000' })).toBe(3)
    expect(sampleValue(text, 'plant_store_pool_connections')).toBe(4)
    expect(sampleValue(text, 'plant_store_pool_idle_connections')).toBe(1)
    expect(sampleValue(text, 'plant_store_pool_waiting_requests')).toBe(7)
    fake.stats.poolWaitingRequests = 0
    text = await metrics.exposition.metrics()
    expect(sampleValue(text, 'plant_store_pool_waiting_requests')).toBe(0)
    expect(text).not.toContain('plant_store_memory_')
  })

  it('exports the memory store\'s fill, and of a store that tells nothing about itself no gauge, its batch sizes at 0', async () => {
    const metrics = createMetrics()
    const store = createObservedPlantRepository(createMemoryPlantRepository({ maxPlants: 1000 }), silent, metrics)
    await store.insert(1, { name: 'fern' })
    const text = await metrics.exposition.metrics()
    expect(sampleValue(text, 'plant_store_memory_plants')).toBe(1)
    expect(sampleValue(text, 'plant_store_memory_capacity_plants')).toBe(1000)
    const bare = createMetrics()
    createObservedPlantRepository({ insert: async () => 'created', ready: async () => {}, close: async () => {} }, silent, bare)
    const bareText = await bare.exposition.metrics()
    expect(bareText).not.toContain('plant_store_memory_')
    expect(bareText).not.toContain('plant_store_pool_')
    expect(sampleValue(bareText, 'plant_store_group_commit_batch_size_count')).toBe(0)
  })

  it('passes outcomes and errors through unchanged, counting and timing each, a lost write as unknown and not as error', async () => {
    const metrics = createMetrics()
    const store = createObservedPlantRepository(poolStore().store, silent, metrics)
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
    await expect(store.insert(13, { name: 'fern' })).rejects.toBeInstanceOf(StoreFullError)
    await expect(store.insert(14, { name: 'fern' })).rejects.toBeInstanceOf(StoreOutcomeUnknownError)
    const text = await metrics.exposition.metrics()
    expect(sampleValue(text, 'plant_store_inserts_total', { outcome: 'created' })).toBe(1)
    expect(sampleValue(text, 'plant_store_inserts_total', { outcome: 'same' })).toBe(0)
    expect(sampleValue(text, 'plant_store_inserts_total', { outcome: 'error' })).toBe(1)
    expect(sampleValue(text, 'plant_store_inserts_total', { outcome: 'unknown' })).toBe(1)
    expect(sampleValue(text, 'plant_store_insert_duration_seconds_count')).toBe(3)
    // In seconds: three inserts of a store in memory take far less than one.
    expect(sampleValue(text, 'plant_store_insert_duration_seconds_sum')).toBeGreaterThan(0)
    expect(sampleValue(text, 'plant_store_insert_duration_seconds_sum')).toBeLessThan(1)
  })

  it('logs a store outage once with its count, not once per refused insert, and once when the store is back', async () => {
    const lines: { fields: Record<string, unknown>, message: string }[] = []
    const log = {
      warn: (fields: object, message: string) => { lines.push({ fields: fields as Record<string, unknown>, message }) },
      info: (fields: object, message: string) => { lines.push({ fields: fields as Record<string, unknown>, message }) }
    }
    let down = true
    const inner: PlantRepository = {
      insert: async () => {
        if (down) throw new StoreUnavailableError({ cause: withCode('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED') })
        return 'created'
      },
      ready: async () => { if (down) throw new StoreUnavailableError({ cause: withCode('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED') }) },
      close: async () => {}
    }
    // A clock that stands still: every failure falls within the interval of the first line.
    vi.useFakeTimers({ toFake: ['Date'] })
    onTestFinished(() => { vi.useRealTimers() })
    const store = createObservedPlantRepository(inner, log)
    const outcomes = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => store.insert(i, { name: 'fern' })))
    // The callers still get the store's own error, each one.
    expect(outcomes).toEqual(Array.from({ length: 100 }, () => ({ status: 'rejected', reason: expect.any(StoreUnavailableError) })))
    await expect(store.ready()).rejects.toBeInstanceOf(StoreUnavailableError)
    expect(lines.map((line) => line.message)).toEqual(['store failing (refused, insert)', 'store failing (refused, readyz)'])
    down = false
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
    expect(lines.map((line) => line.message)).toEqual(['store failing (refused, insert)', 'store failing (refused, readyz)', 'store back'])
    await store.ready()
    expect(lines).toHaveLength(3)
    expect(lines[2]?.fields).toMatchObject({ subject: 'store', failures: 101 })
    await store.close()
  })

  it('ends an outage seen by /readyz when the store answers /readyz again', async () => {
    const messages: string[] = []
    const log = {
      warn: (_fields: object, message: string) => { messages.push(message) },
      info: (_fields: object,
        message: string) => { messages.push(message) }
    }
    let down = true
    const store = createObservedPlantRepository({
      insert: async () => 'created',
      ready: async () => { if (down) throw new StoreUnavailableError() },
      close: async () => {}
    }, log)
    await expect(store.ready()).rejects.toBeInstanceOf(StoreUnavailableError)
    down = false
    await store.ready()
    expect(messages).toEqual(['store failing (closed, readyz)', 'store back'])
    await store.close()
  })

  it('closes the store on close', async () => {
    let closed = 0
    const store = createObservedPlantRepository({ insert: async () => 'created', ready: async () => {}, close: async () => { closed++ } }, silent)
    await store.close()
    expect(closed).toBe(1)
  })

  it('names the kinds of failure an operator tells apart', () => {
    const unavailable = (cause?: unknown): Error => new StoreUnavailableError(cause === undefined ? {} : { cause })
    expect(failureKind(unavailable(withCode('connect ECONNREFUSED', 'ECONNREFUSED')))).toBe('refused')
    expect(failureKind(unavailable(withCode('canceling statement due to statement timeout', '57014')))).toBe('timeout')
    expect(failureKind(unavailable(withCode('canceling statement due to user request', '57014')))).toBe('timeout')
    expect(failureKind(unavailable(new Error('timeout exceeded when trying to connect')))).toBe('timeout')
    expect(failureKind(unavailable(withCode('database is locked', 'SQLITE_BUSY')))).toBe('busy')
    expect(failureKind(unavailable(withCode('terminating connection due to administrator command', '57P01')))).toBe('down')
    expect(failureKind(new StoreFullError({ cause: withCode('could not extend file', '53100') }))).toBe('full')
    expect(failureKind(unavailable())).toBe('closed')
    // Whatever ended the connection, a write whose outcome nobody knows is counted apart.
    expect(failureKind(new StoreOutcomeUnknownError({ cause: withCode('Connection terminated unexpectedly', 'ECONNRESET') }))).toBe('outcome unknown')
    expect(failureKind(new WritesFailingError('6000'))).toBe('writes failing')
    // The innermost cause decides, however deep; a code alone, or a prefix of SQLite's extended codes.
    expect(failureKind(unavailable(new Error('pool', { cause: new Error('socket', { cause: withCode('connect', 'ECONNREFUSED') }) })))).toBe('refused')
    expect(failureKind(unavailable(withCode('read failed', 'ETIMEDOUT')))).toBe('timeout')
    expect(failureKind(unavailable(withCode('lock not available', '55P03')))).toBe('timeout')
    expect(failureKind(unavailable(withCode('database is locked', 'SQLITE_BUSY_SNAPSHOT')))).toBe('busy')
    expect(failureKind(unavailable(withCode('database table is locked', 'SQLITE_LOCKED_SHAREDCACHE')))).toBe('busy')
    expect(failureKind(unavailable({ code: 'EPIPE', message: 'a timeout, but not an Error' }))).toBe('down')
    // Node's connect() to a name with several addresses: the first attempt's code; a cyclic chain still ends.
    expect(failureKind(unavailable(new AggregateError([withCode('connect ECONNREFUSED', 'ECONNREFUSED')], '')))).toBe('refused')
    const cyclic: Error & { cause?: unknown } = withCode('socket closed', 'ECONNRESET')
    cyclic.cause = new Error('again', { cause: cyclic })
    expect(failureKind(unavailable(cyclic))).toBe('down')
  })

  it('logs a SQLite file that is busy (another process writes) and full as their own kinds, once each with the count', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-observed-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const lines: Record<string, unknown>[] = []
    const log = {
      warn: (fields: object) => { lines.push(fields as Record<string, unknown>) },
      info: (fields: object) => { lines.push(fields as Record<string, unknown>) }
    }
    vi.useFakeTimers({ toFake: ['Date'] })
    onTestFinished(() => { vi.useRealTimers() })
    const busyPath = join(dir, 'busy.db')
    const busy = createObservedPlantRepository(createSqlitePlantRepository(busyPath, { busyTimeoutMs: 20 }), log)
    onTestFinished(() => busy.close())
    const other = new Database(busyPath)
    onTestFinished(() => { other.close() })
    other.exec('BEGIN IMMEDIATE')
    for (let i = 0; i < 3; i++) await expect(busy.insert(i, { name: 'fern' })).rejects.toBeInstanceOf(StoreUnavailableError)
    other.exec('COMMIT')

    const full = createObservedPlantRepository(createSqlitePlantRepository(join(dir, 'full.db'), { maxPageCount: 12 }), log)
    onTestFinished(() => full.close())
    let refusals = 0
    for (let id = 0; id < 2000 && refusals < 3; id++) {
      await full.insert(id, { name: 'a fairly long plant name '.repeat(20) }).catch((error: unknown) => {
        expect(error).toBeInstanceOf(StoreFullError)
        refusals++
      })
    }
    expect(lines.map((line) => [line.failure, line.failures, (line.cause as { code?: string } | undefined)?.code])).toEqual([
      ['busy', 1, 'SQLITE_BUSY'],
      ['full', 1, 'SQLITE_FULL']
    ])
  })
})
