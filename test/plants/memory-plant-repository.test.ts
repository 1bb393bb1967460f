import { describe, expect, it } from 'vitest'
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
