import { randomInt } from 'node:crypto'

/**
 * A map from safe integers (|key| ≤ 2^53 − 1) to numbers, for the memory store's ids and record
 * handles. A JS Map boxes every key beyond ±2^31 as a heap number and keeps its values in a heap
 * array: objects the garbage collector copies and marks for as long as the entries live. Here keys
 * and values sit unboxed in one Float64Array (open addressing, linear probing, at most half full),
 * outside the JS heap: a million entries are nothing for the GC to trace.
 */
export class SafeIntegerMap {
  /**
   * Slot i is entries[2i] (the key, 0 when empty) and entries[2i + 1] (its value): a key and its
   * value share a cache line. In a table of millions of slots nearly every lookup misses the
   * cache and the TLB, and on a virtual machine a TLB miss costs a two-level page walk; with keys
   * and values in separate arrays an insert paid that twice (bench/README.md).
   *
   * Empty is 0, the bytes a new Float64Array starts with: a new table needs no writing, and the
   * operating system maps its pages only as slots are used (filling 32 MiB with NaN at start cost
   * 13 ms of the start time). The key 0 itself is stored as ZERO_KEY.
   */
  #entries: Float64Array<ArrayBuffer>
  /**
   * While the table grows: the previous one, read-only, whose keys move into #entries a few slots
   * per set (#moved: slots moved so far). Rehashing millions of keys at once stopped every request
   * for hundreds of milliseconds (docs/performance.md, "Scale").
   */
  #old: Float64Array<ArrayBuffer> | undefined
  #moved = 0
  #size = 0

  constructor (initialCapacity = 1024) {
    this.#entries = new Float64Array(2 * 2 ** Math.max(4, Math.ceil(Math.log2(initialCapacity))))
  }

  get size (): number { return this.#size }

  /** Bytes the table takes once it holds `size` keys: it doubles when more than half its slots would be used. */
  byteLengthWith (size: number): number {
    let length = this.#entries.length
    while (size * 4 > length) length *= 2
    return length * Float64Array.BYTES_PER_ELEMENT
  }

  get (key: number): number | undefined {
    const k = key === 0 ? ZERO_KEY : key
    return valueIn(this.#entries, k) ?? (this.#old === undefined ? undefined : valueIn(this.#old, k))
  }

  /** Adds or replaces the value of a safe-integer key. */
  set (key: number, value: number): void {
    if (!Number.isSafeInteger(key)) throw new RangeError(`SafeIntegerMap keys must be safe integers, got ${key}`)
    if (this.#old !== undefined) {
      this.#move(this.#old)
    } else if ((this.#size + 1) * 4 > this.#entries.length) {
      // A table twice as large; the keys move into it as later keys are set.
      this.#old = this.#entries
      this.#moved = 0
      this.#entries = new Float64Array(2 * this.#old.length)
    }
    const entries = this.#entries
    const k = key === 0 ? ZERO_KEY : key
    const i = probe(entries, k)
    // A key still waiting in the previous table is already counted.
    if (entries[2 * i] === 0 && (this.#old === undefined || valueIn(this.#old, k) === undefined)) this.#size++
    entries[2 * i] = k
    entries[2 * i + 1] = value
  }

  clear (): void {
    this.#entries = new Float64Array(this.#entries.length)
    this.#old = undefined
    this.#size = 0
  }

  /**
   * Moves the next MOVES_PER_SET slots of the previous table, keeping a value set since. The new
   * table has room for as many keys again as the old one held before it grows in turn; at this
   * rate the old one is empty after half of them.
   */
  #move (old: Float64Array<ArrayBuffer>): void {
    const entries = this.#entries
    const end = Math.min(this.#moved + MOVES_PER_SET, old.length >>> 1)
    for (let s = this.#moved; s < end; s++) {
      const key = old[2 * s] as number
      if (key === 0) continue
      const i = probe(entries, key)
      if (entries[2 * i] === 0) {
        entries[2 * i] = key
        entries[2 * i + 1] = old[2 * s + 1] as number
      }
    }
    this.#moved = end
    if (end === old.length >>> 1) {
      // Its memory is released now: dropped, it would stay resident until a major GC, which a store
      // that keeps nothing on the JS heap may not see for millions of inserts.
      old.buffer.transfer(0)
      this.#old = undefined
    }
  }
}

const MOVES_PER_SET = 4
/** Stands for the key 0, whose slot would look empty: not a safe integer, so never a key of its own. */
const ZERO_KEY = 2 ** 53

/** The slot that holds a key other than 0, or the empty slot where it would go (linear probing). */
function probe (entries: Float64Array, key: number): number {
  const mask = (entries.length >>> 1) - 1
  for (let i = slot(key, mask); ; i = (i + 1) & mask) {
    const k = entries[2 * i] as number
    if (k === key || k === 0) return i
  }
}

function valueIn (entries: Float64Array, key: number): number | undefined {
  const i = probe(entries, key)
  return entries[2 * i] === key ? entries[2 * i + 1] : undefined
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
