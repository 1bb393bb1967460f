import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { TextArena } from '../../src/lib/text-arena.js'

describe('TextArena', () => {
  it('gives back every name and tag exactly, with or without a tag (empty tag included)', () => {
    const arena = new TextArena()
    const plants = [
      { name: 'fern' }, { name: 'rose', tag: 'flower' }, { name: '', tag: '' }, { name: 'ivy', tag: '' }, { name: '' },
      { name: '🌵 cactus 👩‍🌾', tag: 'نبات' }, { name: 'e\u0301chinacea' }, { name: 'a"b\\c\u0001' }
    ]
    const handles = plants.map((plant) => arena.add(plant.name, plant.tag))
    expect(handles.map((handle) => arena.read(handle))).toEqual(plants)
    expect('tag' in arena.read(handles[0] as number)).toBe(false)
  })

  it('gives back ASCII texts short and long, and texts that turn non-ASCII midway', () => {
    const arena = new TextArena()
    const texts = ['a', 'x'.repeat(63), 'x'.repeat(64), 'x'.repeat(65), 'x'.repeat(300), `${'y'.repeat(40)}é${'z'.repeat(10)}`, `${'y'.repeat(63)}€`, 'fern\u007f', 'ok then 🌵']
    const handles = texts.map((text, i) => arena.add(text, texts[texts.length - 1 - i]))
    expect(handles.map((handle) => arena.read(handle))).toEqual(texts.map((text, i) => ({ name: text, tag: texts[texts.length - 1 - i] })))
  })

  it('round-trips any well-formed text, across chunk boundaries (property)', () => {
    const arena = new TextArena()
    const stored: Array<[number, { name: string, tag?: string }]> = []
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), fc.option(fc.string({ unit: 'binary', maxLength: 50 }), { nil: undefined }), (name, tag) => {
      const safeTag = tag?.isWellFormed() === true ? tag : undefined
      const handle = arena.add(name, safeTag)
      const plant = safeTag === undefined ? { name } : { name, tag: safeTag }
      stored.push([handle, plant])
      expect(arena.read(handle)).toEqual(plant)
    }), { numRuns: 2000 })
    for (const [handle, plant] of stored) expect(arena.read(handle)).toEqual(plant)
  })

  it('keeps records when chunks fill up, including one larger than a chunk', () => {
    const arena = new TextArena()
    const big = 'ü'.repeat(3 * 1024 * 1024) // 6 MiB of UTF-8, beyond one 4 MiB chunk
    const before = Array.from({ length: 20000 }, (_, i) => arena.add(`plant ${i} `.repeat(30), i % 2 === 0 ? undefined : `tag ${i}`))
    const bigHandle = arena.add(big, 'big')
    const after = Array.from({ length: 20000 }, (_, i) => arena.add(`after ${i}`, undefined))
    expect(arena.read(before[12345] as number)).toEqual({ name: 'plant 12345 '.repeat(30), tag: 'tag 12345' })
    expect(arena.read(bigHandle)).toEqual({ name: big, tag: 'big' })
    expect(arena.read(after[19999] as number)).toEqual({ name: 'after 19999' })
  })

  it('refuses text with an unpaired surrogate instead of storing it changed', () => {
    const arena = new TextArena()
    const message = 'TextArena stores well-formed text only (no unpaired surrogates)'
    expect(() => arena.add('a\ud800b', undefined)).toThrow(new TypeError(message))
    expect(() => arena.add('ok', '\udc00')).toThrow(new TypeError(message))
  })

  it('starts a new chunk after a record that ends exactly at the chunk size, in a chunk made larger for it', () => {
    const arena = new TextArena()
    // 8 header bytes + this name end at 4 MiB; its reserve (3 bytes a unit) got it a chunk of its own, larger.
    const exact = 'x'.repeat(4 * 1024 * 1024 - 8)
    const first = arena.add(exact, undefined)
    const second = arena.add('after', 'tag')
    expect(arena.read(first)).toEqual({ name: exact })
    expect(arena.read(second)).toEqual({ name: 'after', tag: 'tag' })
  })

  it('counts the bytes it holds: an 8-byte header and the UTF-8 of name and tag per text', () => {
    const arena = new TextArena()
    expect(arena.byteLength).toBe(0)
    arena.add('fern', undefined)
    expect(arena.byteLength).toBe(8 + 4)
    arena.add('é🌵', 'tag')
    expect(arena.byteLength).toBe(8 + 4 + 8 + 2 + 4 + 3)
  })
})
