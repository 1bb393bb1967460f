import { describe, expect, it } from 'vitest'
import { createPlantService } from '../../src/plants/plant-service.js'
import type { PlantRepository } from '../../src/plants/plant-repository.js'

/** A store that records what it was given and answers `outcome`. */
function recording (outcome: 'created' | 'same' | 'conflict') {
  const inserted: unknown[] = []
  const repository = { insert: async (id: unknown, plant: unknown) => { inserted.push([id, plant]); return outcome } } as unknown as PlantRepository
  return { repository, inserted }
}

describe('plant service', () => {
  it('stores only the contract\'s fields: no tag key at all when the body has none', async () => {
    const { repository, inserted } = recording('created')
    const plant = await createPlantService(repository).create({ id: 1, name: 'fern', extra: true } as never)
    expect(plant).toStrictEqual({ name: 'fern' })
    expect(inserted).toStrictEqual([[1, { name: 'fern' }]])
    expect(await createPlantService(repository).create({ id: 2, name: 'fern', tag: 't' })).toStrictEqual({ name: 'fern', tag: 't' })
  })

  it('answers a conflict with the 409 error naming the id', async () => {
    await expect(createPlantService(recording('conflict').repository).create({ id: 2n ** 62n, name: 'fern' }))
      .rejects.toMatchObject({ statusCode: 409, message: `a plant with id ${2n ** 62n} already exists with another name or tag` })
  })
})
