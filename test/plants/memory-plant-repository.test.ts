import { describe, expect, it } from 'vitest'
import { StoreFullError } from '../../src/errors.js'
import { createMemoryPlantRepository } from '../../src/plants/memory-plant-repository.js'
import { repositoryContract } from './repository-contract.js'

repositoryContract('memory', async () => createMemoryPlantRepository({ maxPlants: 10000 }))

describe('memory store', () => {
  it('counts ids beyond ±2^53 toward MAX_PLANTS and its stats like any other', async () => {
    const store = createMemoryPlantRepository({ maxPlants: 2 })
    expect(store.stats?.()).toEqual({ plants: 0, capacity: 2 })
    expect(await store.insert(2n ** 60n, { name: 'fern' })).toBe('created')
    expect(await store.insert(1, { name: 'moss' })).toBe('created')
    expect(store.stats?.()).toEqual({ plants: 2, capacity: 2 })
    await expect(store.insert(2, { name: 'ivy' })).rejects.toBeInstanceOf(StoreFullError)
    await expect(store.insert(-(2n ** 60n), { name: 'ivy' })).rejects.toBeInstanceOf(StoreFullError)
    expect(store.stats?.()).toEqual({ plants: 2, capacity: 2 })
  })

  it('refuses a new plant beyond MAX_PLANTS with StoreFullError, and still answers replays and conflicts', async () => {
    const store = createMemoryPlantRepository({ maxPlants: 1 })
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
    await expect(store.insert(2, { name: 'moss' })).rejects.toBeInstanceOf(StoreFullError)
    expect(await store.insert(1, { name: 'fern' })).toBe('same')
    expect(await store.insert(1, { name: 'moss' })).toBe('conflict')
  })

  it('forgets every plant on close(): the same ids are created anew, in a store that was full', async () => {
    const store = createMemoryPlantRepository({ maxPlants: 2 })
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
    expect(await store.insert(2n ** 60n, { name: 'moss' })).toBe('created')
    await store.close()
    expect(store.stats?.()).toEqual({ plants: 0, capacity: 2 })
    expect(await store.insert(1, { name: 'ivy' })).toBe('created')
    expect(await store.insert(2n ** 60n, { name: 'ivy' })).toBe('created')
    await expect(store.insert(3, { name: 'x' })).rejects.toBeInstanceOf(StoreFullError)
  })

  it('is ready at once', async () => {
    await expect(createMemoryPlantRepository({ maxPlants: 1 }).ready()).resolves.toBeUndefined()
  })
})
