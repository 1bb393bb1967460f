import { ConfigError } from './config.js'
import type { PlantRepository } from './plants/plant-repository.js'

export interface StorageOptions {
  databaseUrl: string
  maxPlants: number
}

/**
 * The one place that picks a store. Each adapter is imported only when chosen, so the memory
 * store never loads a database driver.
 */
export async function createRepository ({ databaseUrl, maxPlants }: StorageOptions): Promise<PlantRepository> {
  if (databaseUrl === 'memory:') {
    const { createMemoryPlantRepository } = await import('./plants/memory-plant-repository.js')
    return createMemoryPlantRepository({ maxPlants })
  }
  throw new ConfigError(`DATABASE_URL: unsupported store "${databaseUrl.split(':', 1)[0]}:"; use memory:`)
}
