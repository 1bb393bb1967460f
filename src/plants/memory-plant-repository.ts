import { StoreFullError } from '../errors.js'
import type { Plant, PlantId } from '../schemas.js'
import { samePlant, type PlantRepository } from './plant-repository.js'

export interface MemoryPlantRepositoryOptions {
  /** Capacity; an insert beyond it is refused with StoreFullError (507). */
  maxPlants: number
}

/**
 * A stored plant: its name alone when it has no tag (most plants), else the Plant. One heap object
 * fewer per untagged plant: less memory (bench/README.md, "memory per plant") and less for the
 * garbage collector to copy and mark as the store grows, which was measured as the larger part of
 * what storing costs a request.
 */
type Stored = string | Plant

const toStored = (plant: Plant): Stored => plant.tag === undefined ? plant.name : plant
const fromStored = (stored: Stored): Plant => typeof stored === 'string' ? { name: stored } : stored

/**
 * Plants in a Map keyed by the canonical id (a number when safe, else a bigint, so one id has one
 * key). Single-threaded, so check-then-set needs no lock. Forgotten on restart.
 */
export function createMemoryPlantRepository ({ maxPlants }: MemoryPlantRepositoryOptions): PlantRepository {
  const plants = new Map<PlantId, Stored>()
  return {
    async insert (id, plant) {
      const stored = plants.get(id)
      if (stored !== undefined) return samePlant(fromStored(stored), plant) ? 'same' : 'conflict'
      if (plants.size >= maxPlants) throw new StoreFullError()
      plants.set(id, toStored(plant))
      return 'created'
    },
    async ready () {},
    async close () {
      plants.clear()
    }
  }
}
