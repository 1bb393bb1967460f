import { StoreFullError } from '../errors.js'
import type { Plant, PlantId } from '../schemas.js'
import { samePlant, type PlantRepository } from './plant-repository.js'

/**
 * Plants in a Map, for trying the service out, tests and demos: forgotten on restart. An id is a number
 * while safe and a bigint beyond, never both (schemas.ts), so it is the key as it comes. Single-threaded,
 * so check-then-set needs no lock. A new plant beyond maxPlants (MAX_PLANTS) is refused with 507.
 */
export function createMemoryPlantRepository ({ maxPlants }: { maxPlants: number }): PlantRepository {
  const plants = new Map<PlantId, Plant>()
  return {
    async insert (id, plant) {
      const stored = plants.get(id)
      if (stored !== undefined) return samePlant(stored, plant) ? 'same' : 'conflict'
      if (plants.size >= maxPlants) throw new StoreFullError()
      plants.set(id, plant)
      return 'created'
    },
    async ready () {},
    stats: () => ({ plants: plants.size, capacity: maxPlants }),
    async close () { plants.clear() }
  }
}
