import { StoreFullError } from '../errors.js'
import { residentAnonymousBytes } from '../lib/memory-limit.js'
import { SafeIntegerMap } from '../lib/safe-integer-map.js'
import { TextArena } from '../lib/text-arena.js'
import type { PlantId } from '../schemas.js'
import { samePlant, type PlantRepository } from './plant-repository.js'

export interface MemoryPlantRepositoryOptions {
  /** Capacity; an insert beyond it is refused with StoreFullError (507). */
  maxPlants: number
  /**
   * Memory as capacity: while the process's resident anonymous memory is at or above this, a new
   * plant is refused with StoreFullError (507), so that a memory limit (a container's) is never
   * reached. Also bounds the id index reserved at start. Absent or 0: no such bound.
   */
  maxResidentBytes?: number
  /** What the resident memory is; tests pass their own. Default: lib/memory-limit.ts. */
  residentBytes?: () => number
}

/** Plants the id index has room for from the start: 32 bytes each (32 MiB for a million). */
const RESERVED_PLANTS = 1_000_000
/** Bytes of the id index per plant (two Float64 slots at a load of at most a half). */
const INDEX_BYTES_PER_PLANT = 32
/** At most this share of maxResidentBytes is reserved for the index at start; it grows past that. */
const INDEX_SHARE = 1 / 8
/**
 * How often the resident memory is read (a read of /proc/self/status, about 20 µs): at 20,000
 * creates a second, an interval lets about 5,000 plants (well under a MiB) in past the bound.
 */
const MEMORY_SAMPLE_MS = 250
/** A store full by memory takes plants again below this share of the bound. */
const RESUME_SHARE = 0.9

/**
 * Plants in memory, with nothing per plant on the JS heap: the name and tag as UTF-8 in a
 * TextArena, the id → record map in a SafeIntegerMap (unboxed, in a Float64Array) for safe-integer ids,
 * or a Map for the rare ids beyond ±2^53 (bigints). So the store can grow to millions of plants
 * without the garbage collector copying or marking them: measured (bench/README.md), plants kept
 * as JS objects cost every request about 2 µs and raised the p99 latency. The id is the canonical
 * one (a number when safe, else a bigint), so one id has one key. Single-threaded, so
 * check-then-set needs no lock. Forgotten on restart.
 */
export function createMemoryPlantRepository ({ maxPlants, maxResidentBytes = 0, residentBytes = residentAnonymousBytes }: MemoryPlantRepositoryOptions): PlantRepository {
  const texts = new TextArena()
  // The index is sized for MAX_PLANTS up front (up to RESERVED_PLANTS): growing it means rehashing
  // every id while requests wait, measured as about 2 µs per request over a run and a higher p99.
  // Under a memory bound, only a share of it: ids hash all over the table, so its every page is
  // resident after a few thousand plants (32 MiB of a 96 MiB container, for the default).
  const reserved = Math.min(maxPlants, RESERVED_PLANTS,
    maxResidentBytes > 0 ? Math.floor(maxResidentBytes * INDEX_SHARE / INDEX_BYTES_PER_PLANT) : Infinity)
  const plants = new SafeIntegerMap(2 * reserved)
  const bigPlants = new Map<bigint, number>()
  const find = (id: PlantId): number | undefined => typeof id === 'number' ? plants.get(id) : bigPlants.get(id)
  // Read on a timer rather than per insert, so that a create pays for a boolean, not a file read.
  // Once full, it stays full until memory is back under the bound by a margin: the collector frees
  // memory in steps, and a store that flipped with each would answer 200s among its 507s.
  let memoryFull = false
  const sample = () => { memoryFull = residentBytes() >= (memoryFull ? maxResidentBytes * RESUME_SHARE : maxResidentBytes) }
  const sampler = maxResidentBytes > 0 ? setInterval(sample, MEMORY_SAMPLE_MS).unref() : undefined
  if (sampler !== undefined) sample()
  return {
    async insert (id, plant) {
      const stored = find(id)
      if (stored !== undefined) return samePlant(texts.read(stored), plant) ? 'same' : 'conflict'
      if (plants.size + bigPlants.size >= maxPlants || memoryFull) throw new StoreFullError()
      const handle = texts.add(plant.name, plant.tag)
      if (typeof id === 'number') plants.set(id, handle)
      else bigPlants.set(id, handle)
      return 'created'
    },
    async ready () {},
    stats: () => ({ plants: plants.size + bigPlants.size, capacity: maxPlants }),
    async close () {
      clearInterval(sampler)
      plants.clear()
      bigPlants.clear()
      texts.clear()
    }
  }
}
