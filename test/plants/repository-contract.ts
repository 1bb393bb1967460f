import { describe, expect, it, onTestFinished } from 'vitest'
import type { InsertOutcome, PlantRepository } from '../../src/plants/plant-repository.js'
import { INT64_MAX, INT64_MIN, type Plant, type PlantId } from '../../src/schemas.js'

/** Returns a new, empty, ready-to-use store each time it is called. */
export type MakeRepository = () => Promise<PlantRepository>

/**
 * The behaviour every store shares. Each adapter's test file runs it; a store passes when it
 * behaves exactly as the memory store does. Plants are read back by replaying them: an identical
 * insert answers 'same' only when the stored plant is exactly the one given.
 */
export function repositoryContract (name: string, makeRepository: MakeRepository): void {
  async function fresh (): Promise<PlantRepository> {
    const repository = await makeRepository()
    onTestFinished(() => repository.close())
    await repository.ready()
    return repository
  }

  describe(`PlantRepository contract: ${name}`, () => {
    it('reports created for a new id', async () => {
      const store = await fresh()
      expect(await store.insert(1, { name: 'fern' })).toBe('created')
    })

    it('reports same for an identical replay, with and without a tag', async () => {
      const store = await fresh()
      await store.insert(1, { name: 'fern' })
      await store.insert(2, { name: 'rose', tag: 'flower' })
      expect(await store.insert(1, { name: 'fern' })).toBe('same')
      expect(await store.insert(2, { name: 'rose', tag: 'flower' })).toBe('same')
    })

    it('reports conflict for another name or tag, and keeps the stored plant unchanged', async () => {
      const store = await fresh()
      await store.insert(3, { name: 'fern', tag: 'green' })
      expect(await store.insert(3, { name: 'moss', tag: 'green' })).toBe('conflict')
      expect(await store.insert(3, { name: 'fern', tag: 'brown' })).toBe('conflict')
      expect(await store.insert(3, { name: 'fern', tag: 'green' })).toBe('same')
    })

    it('tells a plant without a tag from one with a tag, even an empty one', async () => {
      const store = await fresh()
      await store.insert(4, { name: 'ivy' })
      await store.insert(5, { name: 'ivy', tag: '' })
      expect(await store.insert(4, { name: 'ivy', tag: '' })).toBe('conflict')
      expect(await store.insert(5, { name: 'ivy' })).toBe('conflict')
      expect(await store.insert(4, { name: 'ivy' })).toBe('same')
      expect(await store.insert(5, { name: 'ivy', tag: '' })).toBe('same')
    })

    it('keeps the int64 extremes and zero as distinct plants', async () => {
      const store = await fresh()
      const ids: PlantId[] = [INT64_MIN, INT64_MIN + 1n, -1, 0, 1, INT64_MAX - 1n, INT64_MAX]
      for (const id of ids) expect(await store.insert(id, { name: `plant ${id}` })).toBe('created')
      for (const id of ids) expect(await store.insert(id, { name: `plant ${id}` })).toBe('same')
      expect(await store.insert(INT64_MAX, { name: `plant ${INT64_MAX - 1n}` })).toBe('conflict')
      expect(await store.insert(INT64_MIN, { name: `plant ${INT64_MIN + 1n}` })).toBe('conflict')
    })

    it('keeps ids around 2^53 apart: 2^53 − 1, 2^53 and 2^53 + 1 are three plants (and their negatives)', async () => {
      const store = await fresh()
      // Canonical ids: a number while safe, a bigint beyond (9007199254740993 has no JS number).
      const ids: PlantId[] = [
        Number.MAX_SAFE_INTEGER, 2n ** 53n, 2n ** 53n + 1n,
        Number.MIN_SAFE_INTEGER, -(2n ** 53n), -(2n ** 53n) - 1n
      ]
      for (const id of ids) expect(await store.insert(id, { name: `n${id}` })).toBe('created')
      for (const id of ids) expect(await store.insert(id, { name: `n${id}` })).toBe('same')
      expect(await store.insert(2n ** 53n + 1n, { name: `n${2n ** 53n}` })).toBe('conflict')
    })

    it('stores text exactly: emoji, combining marks, right-to-left, quotes, long strings', async () => {
      const store = await fresh()
      const texts = [
        '🌵 cactus 👩‍🌾',
        'e\u0301chinacea', // e + combining acute: not the same text as the precomposed é
        'نبات الصبار',
        'שרך',
        'quote " backslash \\ brace { } comma , null-word NULL',
        '  spaces around  ',
        'x'.repeat(20000),
        '\u{10FFFF}\uFEFF\u200B'
      ]
      let id = 100
      for (const text of texts) {
        id++
        expect(await store.insert(id, { name: text, tag: text })).toBe('created')
        expect(await store.insert(id, { name: text, tag: text })).toBe('same')
      }
      await store.insert(200, { name: 'e\u0301chinacea' })
      expect(await store.insert(200, { name: '\u00e9chinacea' })).toBe('conflict')
      expect(await store.insert(200, { name: 'e\u0301chinacea ' })).toBe('conflict')
      await store.insert(201, { name: 'x'.repeat(20000) })
      expect(await store.insert(201, { name: 'x'.repeat(19999) })).toBe('conflict')
    })

    it('lets exactly one of many concurrent creates of one id win; the others see same or conflict', async () => {
      const store = await fresh()
      const plants: Plant[] = Array.from({ length: 60 }, (_, i) => ({ name: `contender ${i % 6}` }))
      const outcomes = await Promise.all(plants.map((plant) => store.insert(42, plant)))
      const winners = outcomes.flatMap((outcome, i) => outcome === 'created' ? [plants[i] as Plant] : [])
      expect(winners).toHaveLength(1)
      const winner = winners[0] as Plant
      outcomes.forEach((outcome, i) => {
        if (outcome !== 'created') expect(outcome).toBe(plants[i]?.name === winner.name ? 'same' : 'conflict')
      })
      expect(await store.insert(42, winner)).toBe('same')
    })

    it('handles many concurrent creates of different ids', async () => {
      const store = await fresh()
      const ids = Array.from({ length: 500 }, (_, i) => i * 7919 - 1000)
      expect(await Promise.all(ids.map((id) => store.insert(id, { name: `p${id}` })))).toEqual(ids.map((): InsertOutcome => 'created'))
      expect(await Promise.all(ids.map((id) => store.insert(id, { name: `p${id}` })))).toEqual(ids.map((): InsertOutcome => 'same'))
    })

    it('finishes the inserts in flight before close resolves; closing twice is harmless', async () => {
      const store = await makeRepository()
      await store.ready()
      const inFlight = [store.insert(7, { name: 'a' }), store.insert(8, { name: 'b' }), store.insert(7, { name: 'c' })]
      await store.close()
      expect(await Promise.all(inFlight)).toEqual(['created', 'created', 'conflict'])
      await store.close()
    })
  })
}
