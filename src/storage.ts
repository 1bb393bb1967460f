import type { Config } from './config/load-config.js'
import type { FailureLogger } from './observability/failure-log.js'
import type { PlantRepository } from './plants/plant-repository.js'

/** The store's settings (the pool's for PostgreSQL only), and where it logs what it does by itself (a failover). */
export type StorageOptions = Pick<Config, 'DATABASE_URL' | 'MAX_PLANTS'> & Partial<Config> & { log?: FailureLogger }

/** The one place that picks a store, importing its driver only when chosen (better-sqlite3 is native). */
export async function createRepository (options: StorageOptions): Promise<PlantRepository> {
  const { DATABASE_URL: url, MAX_PLANTS: maxPlants } = options
  if (url === 'memory:') {
    return (await import('./plants/memory-plant-repository.js')).createMemoryPlantRepository({ maxPlants })
  }
  if (url.startsWith('sqlite:')) {
    return (await import('./plants/sqlite-plant-repository.js')).createSqlitePlantRepository(url.replace('sqlite:', ''))
  }
  // Otherwise postgres:// or postgresql://, which the schema of DATABASE_URL allows (config/env.ts).
  return (await import('./plants/postgres-plant-repository.js')).createPostgresPlantRepository(url, options)
}
