import { PlantConflictError } from '../errors.js'
import type { NewPlant, Plant } from '../schemas.js'
import type { PlantRepository } from './plant-repository.js'

export type PlantService = ReturnType<typeof createPlantService>

export function createPlantService (repository: PlantRepository) {
  return {
    /** Stores the plant, or confirms that the identical plant is stored (a safe retry). */
    async create ({ id, name, tag }: NewPlant): Promise<Plant> {
      // Only the contract's fields are kept: extra properties of the body are ignored.
      const plant: Plant = tag === undefined ? { name } : { name, tag }
      if (await repository.insert(id, plant) === 'conflict') throw new PlantConflictError(String(id))
      return plant
    }
  }
}
