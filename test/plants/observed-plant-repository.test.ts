import { describe, expect, it } from 'vitest'
import { StoreFullError, StoreUnavailableError } from '../../src/errors.js'
import { createMemoryPlantRepository } from '../../src/plants/memory-plant-repository.js'
import { createObservedPlantRepository, failureKind } from '../../src/plants/observed-plant-repository.js'
import type { PlantRepository } from '../../src/plants/plant-repository.js'
import { repositoryContract } from './repository-contract.js'

const silent = { warn: () => {}, info: () => {} }
const withCode = (message: string, code: string): Error => Object.assign(new Error(message), { code })

repositoryContract('memory, observed', async () => createObservedPlantRepository(createMemoryPlantRepository({ maxPlants: 1000 }), { log: silent }))

describe('createObservedPlantRepository', () => {
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
  })
})
