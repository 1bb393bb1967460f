import { createPlantClient, type NewPlant, type Plant, type PlantClientOptions } from '../../client/src/index.js'
import { E2E_TOKEN, type ServerProcess } from '../e2e/server-process.js'

/** A client of a built server started by storage-process.ts's startServer (its token). */
export const clientOf = (server: ServerProcess, options: Partial<PlantClientOptions> = {}) =>
  createPlantClient({ baseUrl: server.url, token: E2E_TOKEN, ...options })

/** The Plant the service answers for a NewPlant. */
export const plantOf = ({ name, tag }: NewPlant): Plant => ({ name, ...(tag !== undefined && { tag }) })

/** The JSON text of any value, bigints as their digits: what a caller would send without the client. */
export const jsonOf = (value: unknown): string =>
  JSON.stringify(value, (_key, item: unknown) => typeof item === 'bigint' ? `bigint:${item}` : item).replace(/"bigint:(-?\d+)"/g, '$1')
