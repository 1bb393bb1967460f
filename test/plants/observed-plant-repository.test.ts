import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it, onTestFinished } from 'vitest'
import { StoreFullError, StoreOutcomeUnknownError, StoreUnavailableError, WritesFailingError } from '../../src/errors.js'
import { createMemoryPlantRepository } from '../../src/plants/memory-plant-repository.js'
import { createSqlitePlantRepository } from '../../src/plants/sqlite-plant-repository.js'
import { createObservedPlantRepository, failureKind } from '../../src/plants/observed-plant-repository.js'
import type { PlantRepository } from '../../src/plants/plant-repository.js'
import { repositoryContract } from './repository-contract.js'

const silent = { warn: () => {}, info: () => {} }
const withCode = (message: string, code: string): Error => Object.assign(new Error(message), { code })

repositoryContract('memory, observed', async () => createObservedPlantRepository(createMemoryPlantRepository({ maxPlants: 1000 }), { log: silent }))

describe('createObservedPlantRepository', () => {
  it('passes the adapter\'s stats and observer hooks through, so the metrics see the wrapped store', async () => {
    const store = createObservedPlantRepository(createMemoryPlantRepository({ maxPlants: 1000 }), { log: silent })
    await store.insert(1, { name: 'fern' })
    expect(store.stats?.()).toEqual({ plants: 1, capacity: 1000 })
    const bare: PlantRepository = { insert: async () => 'created', ready: async () => {}, close: async () => {} }
    const observed = createObservedPlantRepository(bare, { log: silent })
    expect(observed.stats).toBeUndefined()
    expect(observed.observe).toBeUndefined()
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
    const store = createObservedPlantRepository(inner, { log, intervalMs: 60000 })
    const outcomes = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => store.insert(i, { name: 'fern' })))
    // The callers still get the store's own error, each one.
    expect(outcomes.every((outcome) => outcome.status === 'rejected' && outcome.reason instanceof StoreUnavailableError)).toBe(true)
    await expect(store.ready()).rejects.toBeInstanceOf(StoreUnavailableError)
    expect(lines.map((line) => line.message)).toEqual(['store failing (refused, insert)', 'store failing (refused, readyz)'])
    down = false
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
    await store.ready()
    expect(lines.map((line) => line.message)).toEqual(['store failing (refused, insert)', 'store failing (refused, readyz)', 'store back'])
    expect(lines[2]?.fields).toMatchObject({ subject: 'store', refused: 101 })
    await store.close()
  })

  it('names the kinds of failure an operator tells apart', () => {
    const unavailable = (cause?: unknown): Error => new StoreUnavailableError(cause === undefined ? {} : { cause })
    expect(failureKind(unavailable(withCode('connect ECONNREFUSED', 'ECONNREFUSED')))).toBe('refused')
    expect(failureKind(unavailable(withCode('canceling statement due to statement timeout', '57014')))).toBe('timeout')
    expect(failureKind(unavailable(new Error('timeout exceeded when trying to connect')))).toBe('timeout')
    expect(failureKind(unavailable(withCode('database is locked', 'SQLITE_BUSY')))).toBe('busy')
    expect(failureKind(unavailable(withCode('terminating connection due to administrator command', '57P01')))).toBe('down')
    expect(failureKind(new StoreFullError({ cause: withCode('could not extend file', '53100') }))).toBe('full')
    expect(failureKind(unavailable())).toBe('closed')
    // Whatever ended the connection, a write whose outcome nobody knows is counted apart.
    expect(failureKind(new StoreOutcomeUnknownError({ cause: withCode('Connection terminated unexpectedly', 'ECONNRESET') }))).toBe('outcome unknown')
    expect(failureKind(new WritesFailingError('6000'))).toBe('writes failing')
  })

  it('logs a SQLite file that is busy (another process writes) and full as their own kinds, once each with the count', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-observed-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const lines: Record<string, unknown>[] = []
    const log = { warn: (fields: object) => { lines.push(fields as Record<string, unknown>) }, info: (fields: object) => { lines.push(fields as Record<string, unknown>) } }
    const busyPath = join(dir, 'busy.db')
    const busy = createObservedPlantRepository(createSqlitePlantRepository({ path: busyPath, busyTimeoutMs: 20 }), { log, intervalMs: 60000 })
    onTestFinished(() => busy.close())
    const other = new Database(busyPath)
    onTestFinished(() => { other.close() })
    other.exec('BEGIN IMMEDIATE')
    for (let i = 0; i < 3; i++) await expect(busy.insert(i, { name: 'fern' })).rejects.toBeInstanceOf(StoreUnavailableError)
    other.exec('COMMIT')

    const full = createObservedPlantRepository(createSqlitePlantRepository({ path: join(dir, 'full.db'), maxPageCount: 12 }), { log, intervalMs: 60000 })
    onTestFinished(() => full.close())
    let refusals = 0
    for (let id = 0; id < 2000 && refusals < 3; id++) {
      await full.insert(id, { name: 'a fairly long plant name '.repeat(20) }).catch((error: unknown) => {
        expect(error).toBeInstanceOf(StoreFullError)
        refusals++
      })
    }
    expect(lines.map((line) => [line.failure, line.refused, (line.cause as { code?: string } | undefined)?.code])).toEqual([
      ['busy', 1, 'SQLITE_BUSY'],
      ['full', 1, 'SQLITE_FULL']
    ])
  })
})
