import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { StoreFullError } from '../../src/errors.js'
import { createMemoryPlantRepository } from '../../src/plants/memory-plant-repository.js'
import { repositoryContract } from './repository-contract.js'

repositoryContract('memory', async () => createMemoryPlantRepository({ maxPlants: 10000 }))

describe('memory store', () => {
  it('refuses a new plant beyond MAX_PLANTS with StoreFullError, and still answers replays', async () => {
    const store = createMemoryPlantRepository({ maxPlants: 1 })
    await store.insert(1, { name: 'fern' })
    await expect(store.insert(2, { name: 'moss' })).rejects.toBeInstanceOf(StoreFullError)
    expect(await store.insert(1, { name: 'fern' })).toBe('same')
  })
})

describe('memory store under a memory bound (MEMORY_STORE_MAX_RSS_BYTES)', () => {
  it('refuses a new plant with StoreFullError once the resident memory reaches the bound, still answers replays and conflicts, and takes plants again only when memory is 10 % under it', async () => {
    vi.useFakeTimers()
    onTestFinished(() => { vi.useRealTimers() })
    let resident = 10_000_000
    const store = createMemoryPlantRepository({ maxPlants: 1000, maxResidentBytes: 20_000_000, residentBytes: () => resident })
    onTestFinished(() => store.close())
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
    resident = 20_000_000
    await vi.advanceTimersByTimeAsync(250)
    await expect(store.insert(2, { name: 'moss' })).rejects.toBeInstanceOf(StoreFullError)
    expect(await store.insert(1, { name: 'fern' })).toBe('same')
    expect(await store.insert(1, { name: 'moss' })).toBe('conflict')
    // Just under the bound is not enough: memory freed by a collection would let creates in between 507s.
    resident = 19_000_000
    await vi.advanceTimersByTimeAsync(250)
    await expect(store.insert(2, { name: 'moss' })).rejects.toBeInstanceOf(StoreFullError)
    resident = 17_900_000
    await vi.advanceTimersByTimeAsync(250)
    expect(await store.insert(2, { name: 'moss' })).toBe('created')
  })

  it('is full from the start when the process is already at the bound', async () => {
    const store = createMemoryPlantRepository({ maxPlants: 1000, maxResidentBytes: 1, residentBytes: () => 2 })
    onTestFinished(() => store.close())
    await expect(store.insert(1, { name: 'fern' })).rejects.toBeInstanceOf(StoreFullError)
  })

  it('reads the real resident memory by default (a bound far above it refuses nothing)', async () => {
    const store = createMemoryPlantRepository({ maxPlants: 10, maxResidentBytes: 2 ** 50 })
    onTestFinished(() => store.close())
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
  })
})
