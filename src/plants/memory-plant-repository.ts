import { StoreFullError } from '../errors.js'
import type { Plant, PlantId } from '../schemas.js'
import { samePlant, type PlantRepository } from './plant-repository.js'

export interface MemoryPlantRepositoryOptions {
  /** Capacity; an insert beyond it is refused with StoreFullError (507). */
  maxPlants: number
}

/**
 * Plants in a Map keyed by the canonical id (a number when safe, else a bigint, so one id has one
 * key). Single-threaded, so check-then-set needs no lock. Forgotten on restart.
 */
export function createMemoryPlantRepository ({ maxPlants }: MemoryPlantRepositoryOptions): PlantRepository {
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
    async close () {
      plants.clear()
    }
  }
}
