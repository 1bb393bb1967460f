import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { SafeIntegerMap } from '../../src/lib/safe-integer-map.js'

const key = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }),
  fc.maxSafeInteger(),
  fc.integer({ min: 0, max: 0xffff }).map((n) => n * 2 ** 32), // same low 32 bits, different high bits
  fc.integer({ min: 0, max: 0xffff }).map((n) => 2 ** 40 + n), // same high bits, different low bits
  fc.constantFrom(0, -0, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2 ** 31, -(2 ** 31), 2 ** 32, -(2 ** 32))
)

type Op = { op: 'set', key: number, value: number } | { op: 'get', key: number } | { op: 'clear' }
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 10, arbitrary: fc.record({ op: fc.constant('set' as const), key, value: fc.double({ noNaN: true }) }) },
  { weight: 10, arbitrary: fc.record({ op: fc.constant('get' as const), key }) },
  { weight: 1, arbitrary: fc.constant({ op: 'clear' as const }) }
)

describe('SafeIntegerMap', () => {
  it('answers every get and size like a Map, through growth and clear (model-based)', () => {
    fc.assert(fc.property(fc.array(op, { maxLength: 3000 }), (ops) => {
      const map = new SafeIntegerMap(16)
      const model = new Map<number, number>()
      for (const step of ops) {
        if (step.op === 'set') {
          map.set(step.key, step.value)
          model.set(step.key, step.value)
        } else if (step.op === 'get') {
          expect(map.get(step.key)).toBe(model.get(step.key))
        } else {
          map.clear()
          model.clear()
        }
        expect(map.size).toBe(model.size)
      }
      for (const [k, v] of model) expect(map.get(k)).toBe(v)
    }), { numRuns: 200 })
  })

  it('keeps 200,000 sequential 13-digit ids (the benchmark\'s) and finds none it was not given', () => {
    const map = new SafeIntegerMap()
    const first = 4_294_967_296
    for (let i = 0; i < 200_000; i++) map.set(first + i, i)
    expect(map.size).toBe(200_000)
    for (let i = 0; i < 200_000; i += 997) expect(map.get(first + i)).toBe(i)
    expect(map.get(first - 1)).toBeUndefined()
    expect(map.get(first + 200_000)).toBeUndefined()
  })

  it('keeps values set while it grows: a key replaced before it moved to the larger table keeps the new value, counted once', () => {
    const map = new SafeIntegerMap(16)
    // The 9th key doubles the table; the next sets move the previous table's slots a few at a time.
    for (let key = 1; key <= 9; key++) map.set(key * 2 ** 33, key)
    for (let key = 1; key <= 9; key++) map.set(key * 2 ** 33, -key)
    for (let key = 10; key <= 40; key++) map.set(key * 2 ** 33, key)
    expect(map.size).toBe(40)
    for (let key = 1; key <= 9; key++) expect(map.get(key * 2 ** 33)).toBe(-key)
    for (let key = 10; key <= 40; key++) expect(map.get(key * 2 ** 33)).toBe(key)
  })

  it('releases the previous table as soon as its keys have moved, without waiting for a garbage collection', () => {
    const slots = 2 ** 20 // 16 MiB of table
    const map = new SafeIntegerMap(slots)
    let key = 1
    while (map.size < slots / 2) map.set(key++, 1)
    const before = process.memoryUsage().arrayBuffers
    // One more key doubles the table (32 MiB more); the old one's slots then move four per set.
    for (let i = 0; i < slots / 4 + 1; i++) map.set(key++, 1)
    // 32 MiB in place of 16: 16 MiB more, not 32 (both tables).
    const grown = process.memoryUsage().arrayBuffers - before
    expect(grown).toBeGreaterThan(12 * 2 ** 20)
    expect(grown).toBeLessThan(20 * 2 ** 20)
    expect(map.get(1)).toBe(1)
  })

  it('treats 0 and -0 as one key, as a Map does', () => {
    const map = new SafeIntegerMap()
    map.set(-0, 1)
    expect(map.get(0)).toBe(1)
    map.set(0, 2)
    expect([map.size, map.get(-0)]).toEqual([1, 2])
  })

  it('refuses keys that are not safe integers (they belong in a Map of bigints)', () => {
    const map = new SafeIntegerMap()
    for (const bad of [2 ** 53, -(2 ** 53), 1.5, Number.NaN, Infinity]) expect(() => map.set(bad, 1)).toThrow(RangeError)
    expect(map.size).toBe(0)
  })

  it('tells the bytes its table takes once it holds a number of keys: 16 per slot, doubled while more than half the slots would be used', () => {
    const map = new SafeIntegerMap(16)
    expect(map.byteLengthWith(0)).toBe(256)
    expect(map.byteLengthWith(8)).toBe(256)
    expect(map.byteLengthWith(9)).toBe(512)
    expect(map.byteLengthWith(17)).toBe(1024)
    for (let key = 1; key <= 9; key++) map.set(key, key)
    // Grown as told: the 9th key doubled it.
    expect(map.byteLengthWith(9)).toBe(512)
    expect(map.byteLengthWith(0)).toBe(512)
  })
})
