import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { StoreFullError, StoreOutcomeUnknownError } from '../../src/errors.js'
import { createMeteredPlantRepository } from '../../src/plants/metered-plant-repository.js'
import type { PlantRepository, StoreObserver, StoreStats } from '../../src/plants/plant-repository.js'
import { sampleValue } from '../helpers.js'

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

describe('metered store', () => {
  it('exports the group-commit size histogram and the pool gauges, read at scrape time', async () => {
    const registry = new Registry()
    const fake = poolStore()
    createMeteredPlantRepository(fake.store, registry)
    fake.batch(1)
    fake.batch(3)
    fake.batch(600)
    let text = await registry.metrics()
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
    text = await registry.metrics()
    expect(sampleValue(text, 'plant_store_pool_waiting_requests')).toBe(0)
    expect(text).not.toContain('plant_store_memory_')
  })

  it('passes outcomes and errors through unchanged, counting each, a lost write as unknown and not as error', async () => {
    const registry = new Registry()
    const store = createMeteredPlantRepository(poolStore().store, registry)
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
    await expect(store.insert(13, { name: 'fern' })).rejects.toBeInstanceOf(StoreFullError)
    await expect(store.insert(14, { name: 'fern' })).rejects.toBeInstanceOf(StoreOutcomeUnknownError)
    const text = await registry.metrics()
    expect(sampleValue(text, 'plant_store_inserts_total', { outcome: 'created' })).toBe(1)
    expect(sampleValue(text, 'plant_store_inserts_total', { outcome: 'error' })).toBe(1)
    expect(sampleValue(text, 'plant_store_inserts_total', { outcome: 'unknown' })).toBe(1)
    expect(sampleValue(text, 'plant_store_insert_duration_seconds_count')).toBe(3)
  })
})
