import { describe, expect, it } from 'vitest'
import { StoreFullError } from '../../src/errors.js'
import { createMemoryPlantRepository } from '../../src/plants/memory-plant-repository.js'
import { repositoryContract } from './repository-contract.js'

repositoryContract('memory', async () => createMemoryPlantRepository({ maxPlants: 10000 }))

describe('memory store', () => {
  it('counts ids beyond ±2^53 toward MAX_PLANTS and its stats like any other', async () => {
    const store = createMemoryPlantRepository({ maxPlants: 2 })
    expect(await store.insert(2n ** 60n, { name: 'fern' })).toBe('created')
    expect(await store.insert(1, { name: 'moss' })).toBe('created')
    expect(store.stats?.()).toEqual({ plants: 2, capacity: 2 })
    await expect(store.insert(2, { name: 'ivy' })).rejects.toBeInstanceOf(StoreFullError)
    await expect(store.insert(-(2n ** 60n), { name: 'ivy' })).rejects.toBeInstanceOf(StoreFullError)
  })

  it('forgets every plant and every byte on close(): the same ids are created anew, in a store that was full', async () => {
    // Room for exactly these two (index 256 bytes, two 12-byte texts, a big id's 64 counted after it).
    const store = createMemoryPlantRepository({ maxPlants: 4, maxBytes: 256 + 2 * 12 })
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
    expect(await store.insert(2n ** 60n, { name: 'moss' })).toBe('created')
    await expect(store.insert(3, { name: 'x' })).rejects.toBeInstanceOf(StoreFullError)
    await store.close()
    // The index keeps its smallest table.
    expect(store.stats?.()).toEqual({ plants: 0, capacity: 4, bytes: 256, capacityBytes: 256 + 2 * 12 })
    expect(await store.insert(1, { name: 'ivy1' })).toBe('created')
    expect(await store.insert(2n ** 60n, { name: 'ivy2' })).toBe('created')
    await expect(store.insert(3, { name: 'x' })).rejects.toBeInstanceOf(StoreFullError)
  })

  it('refuses a new plant beyond MAX_PLANTS with StoreFullError, and still answers replays', async () => {
    const store = createMemoryPlantRepository({ maxPlants: 1 })
    await store.insert(1, { name: 'fern' })
    await expect(store.insert(2, { name: 'moss' })).rejects.toBeInstanceOf(StoreFullError)
    expect(await store.insert(1, { name: 'fern' })).toBe('same')
  })
})

describe('memory store under a memory bound (MEMORY_STORE_MAX_BYTES): the bytes its plants hold', () => {
  // With maxPlants 4 the id index is its smallest table (16 slots of 16 bytes: 256 bytes) and does
  // not grow; each plant's text is an 8-byte header and its name and tag as UTF-8.
  const INDEX = 256
  const record = (text: string) => 8 + Buffer.byteLength(text)

  it('refuses a new plant with StoreFullError once the plants hold maxBytes (texts in UTF-8 bytes, the index), still answers replays and conflicts', async () => {
    const name = 'ééééé' // 5 characters, 10 bytes
    const maxBytes = INDEX + 2 * record(name)
    const store = createMemoryPlantRepository({ maxPlants: 4, maxBytes })
    expect(await store.insert(1, { name })).toBe('created')
    expect(await store.insert(2, { name })).toBe('created')
    await expect(store.insert(3, { name: 'x' })).rejects.toBeInstanceOf(StoreFullError)
    expect(await store.insert(1, { name })).toBe('same')
    expect(await store.insert(2, { name: 'moss' })).toBe('conflict')
    // Full to the byte: what the plants hold, exported as plant_store_memory_bytes, is the bound.
    expect(store.stats?.()).toEqual({ plants: 2, capacity: 4, bytes: maxBytes, capacityBytes: maxBytes })
  })

  it('takes a plant while the plants hold even one byte less than maxBytes, and counts the tag', async () => {
    const store = createMemoryPlantRepository({ maxPlants: 4, maxBytes: INDEX + record('fern' + 'green') + 1 })
    expect(await store.insert(1, { name: 'fern', tag: 'green' })).toBe('created')
    expect(await store.insert(2, { name: 'x' })).toBe('created')
    await expect(store.insert(3, { name: 'x' })).rejects.toBeInstanceOf(StoreFullError)
  })

  it('counts the index as it will be once it grows, before it grows', async () => {
    // 16 slots hold 8 ids; the 9th doubles the table to 512 bytes: 8 one-byte names (72 bytes) and
    // 512 pass 500, while 72 and the current 256 would not.
    const store = createMemoryPlantRepository({ maxPlants: 100, maxBytes: 500 })
    for (let id = 1; id <= 8; id++) expect(await store.insert(id, { name: 'a' })).toBe('created')
    await expect(store.insert(9, { name: 'a' })).rejects.toBeInstanceOf(StoreFullError)
    const roomy = createMemoryPlantRepository({ maxPlants: 100, maxBytes: 8 * record('a') + 512 + 1 })
    for (let id = 1; id <= 9; id++) expect(await roomy.insert(id, { name: 'a' })).toBe('created')
  })

  it('counts 64 bytes for each id beyond ±2^53 (a bigint and a Map entry on the heap)', async () => {
    const big = 2n ** 60n
    const held = INDEX + record('a') + 64
    const tight = createMemoryPlantRepository({ maxPlants: 4, maxBytes: held })
    expect(await tight.insert(big, { name: 'a' })).toBe('created')
    await expect(tight.insert(1, { name: 'a' })).rejects.toBeInstanceOf(StoreFullError)
    const roomy = createMemoryPlantRepository({ maxPlants: 4, maxBytes: held + 1 })
    expect(await roomy.insert(big, { name: 'a' })).toBe('created')
    expect(await roomy.insert(1, { name: 'a' })).toBe('created')
    expect(await roomy.insert(big, { name: 'a' })).toBe('same')
  })

  it('is moved by stored plants only: replays, conflicts and refusals leave a store that has room able to take the next plant', async () => {
    const store = createMemoryPlantRepository({ maxPlants: 4, maxBytes: INDEX + 2 * record('fern') })
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
    for (let i = 0; i < 10000; i++) {
      expect(await store.insert(1, { name: 'fern' })).toBe('same')
      expect(await store.insert(1, { name: 'moss' })).toBe('conflict')
    }
    expect(await store.insert(2, { name: 'fern' })).toBe('created')
  })

  it('reserves the id index for MAX_PLANTS up front, at most a quarter of maxBytes: the bytes an empty store holds', () => {
    // A quarter of 10^6 bytes is 7,812 plants of 32 bytes: 15,624 slots, rounded up to 2^14 slots of 16 bytes.
    expect(createMemoryPlantRepository({ maxPlants: 100000, maxBytes: 1e6 }).stats?.().bytes).toBe(2 ** 14 * 16)
    // MAX_PLANTS 1,000 binds first: 2,000 slots, rounded up to 2^11.
    expect(createMemoryPlantRepository({ maxPlants: 1000, maxBytes: 1e6 }).stats?.().bytes).toBe(2 ** 11 * 16)
  })

  it('has no bound but MAX_PLANTS without maxBytes (or with 0)', async () => {
    for (const options of [{ maxPlants: 3 }, { maxPlants: 3, maxBytes: 0 }]) {
      const store = createMemoryPlantRepository(options)
      for (let id = 1; id <= 3; id++) expect(await store.insert(id, { name: 'x'.repeat(100000) })).toBe('created')
      await expect(store.insert(4, { name: 'x' })).rejects.toBeInstanceOf(StoreFullError)
    }
  })
})
