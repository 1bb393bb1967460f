import { StoreFullError } from '../errors.js'
import { SafeIntegerMap } from '../lib/safe-integer-map.js'
import { TextArena } from '../lib/text-arena.js'
import { samePlant, type PlantRepository } from './plant-repository.js'

/** Plants the id index has room for from the start (32 MiB for a million): growing it costs every id a move. */
const RESERVED_PLANTS = 1_000_000
/** Two Float64 slots per plant at a load of at most a half. */
const INDEX_BYTES_PER_PLANT = 32
/** Under a memory bound, at most this share of it is reserved for the index at start. */
const INDEX_SHARE = 1 / 4
/** A bigint and a Map entry on the JS heap, for each id beyond ±2^53. */
const BIG_ID_BYTES = 64

/**
 * Plants in memory with nothing per plant on the JS heap (names and tags in a TextArena, ids in a
 * SafeIntegerMap), so millions of plants cost the garbage collector nothing (docs/performance.md).
 * Single-threaded, so check-then-set needs no lock. Forgotten on restart.
 *
 * maxPlants is the capacity: an insert beyond it is refused with StoreFullError (507). maxBytes is
 * MEMORY_STORE_MAX_BYTES: the bytes the plants hold (UTF-8 names and tags, the id index); a new plant
 * that would pass it is a 507. Only stored plants move it, never load (that is the overload check's 503).
 */
export function createMemoryPlantRepository (options: { maxPlants: number, maxBytes?: number }): PlantRepository {
  const { maxPlants, maxBytes = 0 } = options
  let texts = new TextArena()
  const underBound = Math.floor((maxBytes || Infinity) * INDEX_SHARE / INDEX_BYTES_PER_PLANT)
  const plants = new SafeIntegerMap(2 * Math.min(maxPlants, RESERVED_PLANTS, underBound))
  const bigPlants = new Map<bigint, number>()
  const count = (): number => plants.size + bigPlants.size
  // The index as it will be with one more id: a doubling counts in full before it happens.
  const heldBytes = (safeIds: number): number =>
    texts.byteLength + plants.byteLengthWith(safeIds) + BIG_ID_BYTES * bigPlants.size
  return {
    async insert (id, plant) {
      const stored = typeof id === 'number' ? plants.get(id) : bigPlants.get(id)
      if (stored !== undefined) return samePlant(texts.read(stored), plant) ? 'same' : 'conflict'
      if (count() >= maxPlants || (maxBytes > 0 && heldBytes(plants.size + 1) >= maxBytes)) throw new StoreFullError()
      const handle = texts.add(plant.name, plant.tag)
      if (typeof id === 'number') plants.set(id, handle)
      else bigPlants.set(id, handle)
      return 'created'
    },
    async ready () {},
    stats: () => ({
      plants: count(),
      capacity: maxPlants,
      ...(maxBytes > 0 ? { bytes: heldBytes(plants.size), capacityBytes: maxBytes } : {})
    }),
    async close () {
      plants.clear()
      bigPlants.clear()
      texts = new TextArena()
    }
  }
}
