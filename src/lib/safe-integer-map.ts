import { randomInt } from 'node:crypto'

/**
 * A map from safe integers (|key| ≤ 2^53 − 1) to numbers, for the memory store's ids and record
 * handles. A JS Map boxes every key beyond ±2^31 as a heap number and keeps its values in a heap
 * array: objects the garbage collector copies and marks for as long as the entries live. Here keys
 * and values sit unboxed in two Float64Arrays (open addressing, linear probing, at most half full),
 * outside the JS heap: a million entries are nothing for the GC to trace.
 */
export class SafeIntegerMap {
  #keys: Float64Array
  #values: Float64Array
  #size = 0

  constructor (initialCapacity = 1024) {
    const capacity = 2 ** Math.max(4, Math.ceil(Math.log2(initialCapacity)))
    this.#keys = new Float64Array(capacity).fill(Number.NaN)
    this.#values = new Float64Array(capacity)
  }

  get size (): number { return this.#size }

  get (key: number): number | undefined {
    const keys = this.#keys
    const mask = keys.length - 1
    for (let i = slot(key, mask); ; i = (i + 1) & mask) {
      const k = keys[i] as number
      if (k === key) return this.#values[i]
      if (Number.isNaN(k)) return undefined
    }
  }

  /** Adds or replaces the value of a safe-integer key. */
  set (key: number, value: number): void {
    if (!Number.isSafeInteger(key)) throw new RangeError(`SafeIntegerMap keys must be safe integers, got ${key}`)
    if ((this.#size + 1) * 2 > this.#keys.length) this.#grow()
    this.#put(key, value)
  }

  clear (): void {
    this.#keys.fill(Number.NaN)
    this.#size = 0
  }

  #put (key: number, value: number): void {
    const keys = this.#keys
    const mask = keys.length - 1
    for (let i = slot(key, mask); ; i = (i + 1) & mask) {
      const k = keys[i] as number
      if (k === key) {
        this.#values[i] = value
        return
      }
      if (Number.isNaN(k)) {
        keys[i] = key
        this.#values[i] = value
        this.#size++
        return
      }
    }
  }

  #grow (): void {
    const keys = this.#keys
    const values = this.#values
    this.#keys = new Float64Array(keys.length * 2).fill(Number.NaN)
    this.#values = new Float64Array(keys.length * 2)
    this.#size = 0
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as number
      if (!Number.isNaN(k)) this.#put(k, values[i] as number)
    }
  }
}

/** Per process, so that which ids collide cannot be worked out in advance (hash flooding). */
const SEED = randomInt(2 ** 31)

/**
 * The first slot for a key: its low 32 bits mixed with the seed, then its high 32 bits, then
 * MurmurHash3's finaliser, so near ids spread and far ids do not pile up.
 */
function slot (key: number, mask: number): number {
  let h = Math.imul((key | 0) ^ SEED, 0xcc9e2d51)
  h = Math.imul((h << 15) | (h >>> 17), 0x1b873593) ^ ((key / 4294967296) | 0)
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h & mask
}
