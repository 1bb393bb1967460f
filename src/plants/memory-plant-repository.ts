import { StoreFullError } from '../errors.js'
import { SafeIntegerMap } from '../lib/safe-integer-map.js'
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
 * Plants keyed by the canonical id: a number when it is safe (lib/safe-integer-map.ts, no boxed key
 * per plant), else a bigint (a Map; ids beyond ±2^53 are rare), so one id has one key.
 * Single-threaded, so check-then-set needs no lock. Forgotten on restart.
 */
export function createMemoryPlantRepository ({ maxPlants }: MemoryPlantRepositoryOptions): PlantRepository {
  const plants = new SafeIntegerMap<Stored>()
  const bigPlants = new Map<bigint, Stored>()
  const get = (id: PlantId): Stored | undefined => typeof id === 'number' ? plants.get(id) : bigPlants.get(id)
  return {
    async insert (id, plant) {
      const stored = get(id)
      if (stored !== undefined) return samePlant(fromStored(stored), plant) ? 'same' : 'conflict'
      if (plants.size + bigPlants.size >= maxPlants) throw new StoreFullError()
      if (typeof id === 'number') plants.set(id, toStored(plant))
      else bigPlants.set(id, toStored(plant))
      return 'created'
    },
    async ready () {},
    async close () {
      plants.clear()
      bigPlants.clear()
    }
  }
}
