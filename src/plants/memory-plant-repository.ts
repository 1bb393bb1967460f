import { StoreFullError } from '../errors.js'
import { SafeIntegerMap } from '../lib/safe-integer-map.js'
import { TextArena } from '../lib/text-arena.js'
import type { PlantId } from '../schemas.js'
import { samePlant, type PlantRepository } from './plant-repository.js'

export interface MemoryPlantRepositoryOptions {
  /** Capacity; an insert beyond it is refused with StoreFullError (507). */
  maxPlants: number
  /**
   * Memory as capacity (MEMORY_STORE_MAX_BYTES): the bytes the plants themselves hold (their
   * names and tags as UTF-8, and the id index). A new plant that would take them past this is
   * refused with StoreFullError (507). Only stored plants move it, never load: a burst of requests
   * is the overload check's (503), and a store that is not full stays so once the burst has passed.
   * Also bounds the id index reserved at start. Absent or 0: no such bound.
   */
  maxBytes?: number
}

/** Plants the id index has room for from the start: 32 bytes each (32 MiB for a million). */
const RESERVED_PLANTS = 1_000_000
/** Bytes of the id index per plant (two Float64 slots at a load of at most a half). */
const INDEX_BYTES_PER_PLANT = 32
/** At most this share of maxBytes is reserved for the index at start; it grows past that. */
const INDEX_SHARE = 1 / 4
/**
 * What an id beyond ±2^53 costs, counted for each: a bigint and a Map entry on the JS heap
 * (V8: about 24 bytes for the bigint, about 40 for the entry and its share of the table).
 */
const BIG_ID_BYTES = 64

/**
 * Plants in memory, with nothing per plant on the JS heap: the name and tag as UTF-8 in a
 * TextArena, the id → record map in a SafeIntegerMap (unboxed, in a Float64Array) for safe-integer ids,
 * or a Map for the rare ids beyond ±2^53 (bigints). So the store can grow to millions of plants
 * without the garbage collector copying or marking them: measured (bench/README.md), plants kept
 * as JS objects cost every request about 2 µs and raised the p99 latency. The id is the canonical
 * one (a number when safe, else a bigint), so one id has one key. Single-threaded, so
 * check-then-set needs no lock. Forgotten on restart.
 */
export function createMemoryPlantRepository ({ maxPlants, maxBytes = 0 }: MemoryPlantRepositoryOptions): PlantRepository {
  const texts = new TextArena()
  // The index is sized for MAX_PLANTS up front (up to RESERVED_PLANTS): growing it means rehashing
  // every id while requests wait, measured as about 2 µs per request over a run and a higher p99.
  // Under a memory bound, only a share of it: ids hash all over the table, so its every page is
  // resident after a few thousand plants.
  // Stryker disable next-line ConditionalExpression: a reservation of 0 (what `true`/`false` for the bound make) only means the index grows sooner (speed, not behaviour)
  const reserved = Math.min(maxPlants, RESERVED_PLANTS, Math.floor((maxBytes || Infinity) * INDEX_SHARE / INDEX_BYTES_PER_PLANT))
  // Stryker disable next-line ArithmeticOperator: a smaller table grows to the same size as plants come (doubling), so the plants that fit are the same (speed, not behaviour)
  const plants = new SafeIntegerMap(2 * reserved)
  const bigPlants = new Map<bigint, number>()
  const find = (id: PlantId): number | undefined => typeof id === 'number' ? plants.get(id) : bigPlants.get(id)
  /**
   * Whether one more plant would take the plants' bytes past the bound: the texts stored, the
   * index as it will be with one more id (a doubling, when it grows, counts in full before it
   * happens), the big ids; the new plant's own text is at most a request body (BODY_LIMIT).
   */
  const heldBytes = (safeIds: number): number =>
    texts.byteLength + plants.byteLengthWith(safeIds) + BIG_ID_BYTES * bigPlants.size
  const full = (): boolean => {
    const count = plants.size + bigPlants.size
    if (count >= maxPlants) return true
    return maxBytes > 0 && heldBytes(plants.size + 1) >= maxBytes
  }
  return {
    async insert (id, plant) {
      const stored = find(id)
      if (stored !== undefined) return samePlant(texts.read(stored), plant) ? 'same' : 'conflict'
      if (full()) throw new StoreFullError()
      const handle = texts.add(plant.name, plant.tag)
      if (typeof id === 'number') plants.set(id, handle)
      else bigPlants.set(id, handle)
      return 'created'
    },
    async ready () {},
    stats: () => ({
      plants: plants.size + bigPlants.size,
      capacity: maxPlants,
      ...(maxBytes > 0 ? { bytes: heldBytes(plants.size), capacityBytes: maxBytes } : {})
    }),
    async close () {
      plants.clear()
      bigPlants.clear()
      texts.clear()
    }
  }
}
