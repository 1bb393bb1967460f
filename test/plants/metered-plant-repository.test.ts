import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { StoreFullError, StoreOutcomeUnknownError } from '../../src/errors.js'
import { createMemoryPlantRepository } from '../../src/plants/memory-plant-repository.js'
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

  it('exports the bytes the memory store\'s plants hold and MEMORY_STORE_MAX_BYTES, read at scrape time; neither without that bound', async () => {
    const registry = new Registry()
    const store = createMeteredPlantRepository(createMemoryPlantRepository({ maxPlants: 4, maxBytes: 1000 }), registry)
    // The id index's smallest table (256 bytes), then each plant's 8-byte header and name.
    expect(sampleValue(await registry.metrics(), 'plant_store_memory_bytes')).toBe(256)
    await store.insert(1, { name: 'fern' })
    const text = await registry.metrics()
    expect(sampleValue(text, 'plant_store_memory_bytes')).toBe(256 + 8 + 4)
    expect(sampleValue(text, 'plant_store_memory_capacity_bytes')).toBe(1000)
    expect(text).toContain('# TYPE plant_store_memory_bytes gauge')

    const unbounded = new Registry()
    createMeteredPlantRepository(createMemoryPlantRepository({ maxPlants: 4 }), unbounded)
    const plain = await unbounded.metrics()
    expect(sampleValue(plain, 'plant_store_memory_capacity_plants')).toBe(4)
    expect(plain).not.toContain('plant_store_memory_bytes')
    expect(plain).not.toContain('plant_store_memory_capacity_bytes')
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
