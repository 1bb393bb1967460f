import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import { describe, expect, it } from 'vitest'
import { INT64_MAX, INT64_MIN } from '../../src/schemas.js'
import { TOKEN, buildTestApp, postPlant } from '../helpers.js'

/**
 * Property tests: whatever arrives as POST /plants, the reply is a documented status with a
 * Plant or a well-formed Error record, never a 5xx, and a body is stored if and only if it is a
 * valid NewPlant, and then exactly. The expected outcome comes from a small model written here,
 * independently of the service's parser and validator.
 */

const BODY_LIMIT = 16384
const RUNS = Number(process.env.FUZZ_RUNS ?? 300)
const DOCUMENTED = new Set([200, 400, 401, 409, 413, 415])

// A JSON document as generated: kept as a tree so that duplicate keys, bigints and number
// literals JSON.stringify cannot write (1e400, 9223372036854775807) can be sent.
type Doc =
  | { t: 'obj', entries: [string, Doc][] }
  | { t: 'arr', items: Doc[] }
  | { t: 'big', v: bigint }
  | { t: 'raw', text: string }
  | { t: 'val', v: unknown }

function serialize (doc: Doc): string {
  switch (doc.t) {
    case 'obj': return '{' + doc.entries.map(([key, value]) => JSON.stringify(key) + ':' + serialize(value)).join(',') + '}'
    case 'arr': return '[' + doc.items.map(serialize).join(',') + ']'
    case 'big': return doc.v.toString()
    case 'raw': return doc.text
    case 'val': return JSON.stringify(doc.v) ?? 'null'
  }
}

/** The exact int64 a JSON number literal denotes, or undefined when it is not one. */
function literalInt64 (literal: string): bigint | undefined {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal)
  if (match === null) return undefined
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = match
  const digits = BigInt(whole + fraction)
  const shift = Number(exponent) - fraction.length
  let value: bigint
  if (digits === 0n) value = 0n
  else if (shift >= 0) {
    if (shift > 40) return undefined
    value = digits * 10n ** BigInt(shift)
  } else {
    if (-shift > 1000) return undefined
    const divisor = 10n ** BigInt(-shift)
    if (digits % divisor !== 0n) return undefined
    value = digits / divisor
  }
  if (sign === '-') value = -value
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined
}

function idOf (doc: Doc | undefined): bigint | undefined {
  if (doc === undefined) return undefined
  if (doc.t === 'big') return doc.v >= INT64_MIN && doc.v <= INT64_MAX ? doc.v : undefined
  if (doc.t === 'raw') return literalInt64(doc.text)
  if (doc.t === 'val' && typeof doc.v === 'number') return literalInt64(JSON.stringify(doc.v))
  return undefined
}

/** Text every store keeps exactly: a string without U+0000 and without a lone surrogate. */
function textOf (doc: Doc | undefined): string | undefined {
  if (doc?.t !== 'val' || typeof doc.v !== 'string') return undefined
  return doc.v.isWellFormed() && !doc.v.includes('\u0000') ? doc.v : undefined
}

interface Stored { name: string, tag?: string }
type Expected = { status: 200, plant: Stored, id: bigint } | { status: 400 | 409 | 413 }

/** What the service must answer, given what it has stored so far (`store`, keyed by the exact id). */
function expectedFor (doc: Doc, text: string, store: Map<bigint, Stored>): Expected {
  if (Buffer.byteLength(text) > BODY_LIMIT) return { status: 413 }
  // `__proto__` and `constructor.prototype` keys are dropped as the body is parsed: like any extra, they change nothing.
  if (doc.t !== 'obj') return { status: 400 }
  const fields = new Map(doc.entries)
  const id = idOf(fields.get('id'))
  const name = textOf(fields.get('name'))
  const tag = fields.has('tag') ? textOf(fields.get('tag')) : undefined
  if (id === undefined || name === undefined || (fields.has('tag') && tag === undefined)) return { status: 400 }
  const plant: Stored = tag === undefined ? { name } : { name, tag }
  const existing = store.get(id)
  if (existing === undefined) return { status: 200, plant, id }
  return existing.name === plant.name && existing.tag === plant.tag ? { status: 200, plant, id } : { status: 409 }
}

/** The reply is a documented status, with a Plant (200) or an Error record with exactly its two keys. */
function expectWellFormed (res: LightMyRequestResponse): void {
  expect(DOCUMENTED.has(res.statusCode), `status ${res.statusCode}: ${res.body}`).toBe(true)
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
  const body = res.json() as Record<string, unknown>
  if (res.statusCode === 200) {
    expect(Object.keys(body).filter((key) => key !== 'name' && key !== 'tag')).toEqual([])
    expect(typeof body.name).toBe('string')
  } else {
    expect(Object.keys(body).sort()).toEqual(['error', 'message'])
    expect(body.error).toBe(res.statusCode)
    expect(typeof body.message).toBe('string')
    expect((body.message as string).length).toBeGreaterThan(0)
  }
}

// Generators -----------------------------------------------------------------------------------

const val = (arbitrary: fc.Arbitrary<unknown>): fc.Arbitrary<Doc> => arbitrary.map((v): Doc => ({ t: 'val', v }))
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code))
const awkwardText = fc.array(fc.oneof(fc.constantFrom('\u0000', 'a', '"', '\\', '\u2028', '\ufeff', '😀'), loneSurrogate),
  { maxLength: 6 }).map((parts) => parts.join(''))

const idDoc: fc.Arbitrary<Doc> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: -30, max: 30 }).map((v): Doc => ({ t: 'val', v })) }, // collisions: replays and conflicts
  { weight: 3, arbitrary: fc.bigInt({ min: INT64_MIN - 1000n, max: INT64_MAX + 1000n }).map((v): Doc => ({ t: 'big', v })) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(INT64_MIN, INT64_MAX, INT64_MIN - 1n, INT64_MAX + 1n, 2n ** 53n, 2n ** 53n + 1n,
      -(2n ** 53n) - 1n).map((v): Doc => ({ t: 'big', v }))
  },
  { weight: 1, arbitrary: val(fc.double()) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('1e400', '-1e400', '-0', '1.5', '1.0', '1E2', '100e-2', '0.0e5', '9223372036854775807.0',
      '92233720368547758070e-1', '5e-324', '123456789012345678901234567890').map((text): Doc => ({ t: 'raw', text }))
  },
  { weight: 1, arbitrary: val(fc.oneof(fc.constant('5'), fc.constant(null), fc.boolean(), fc.jsonValue({ maxDepth: 2 }))) }
)
const textDoc: fc.Arbitrary<Doc> = fc.oneof(
  { weight: 3, arbitrary: val(fc.string({ unit: 'binary', maxLength: 40 })) },
  { weight: 2, arbitrary: val(fc.constantFrom('fern', 'moss', '')) },
  { weight: 1, arbitrary: val(awkwardText) },
  // Long strings around the body limit (é is two bytes): some fit, some get 413.
  { weight: 1, arbitrary: val(fc.integer({ min: 8000, max: 8300 }).map((n) => 'é'.repeat(n))) },
  { weight: 1, arbitrary: val(fc.oneof(fc.constant(null), fc.integer(), fc.jsonValue({ maxDepth: 2 }))) }
)
// Extra properties are accepted and ignored, prototype-poisoning keys too (dropped by the parser).
const nestedDoc: fc.Arbitrary<Doc> = fc.letrec<{ doc: Doc }>((tie) => ({
  doc: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    val(fc.jsonValue({ maxDepth: 2 })),
    fc.array(fc.tuple(fc.oneof(fc.string({ maxLength: 5 }), fc.constantFrom('__proto__', 'constructor', 'prototype')), tie('doc')), { maxLength: 3 })
      .map((entries): Doc => ({ t: 'obj', entries })),
    fc.array(tie('doc'), { maxLength: 3 }).map((items): Doc => ({ t: 'arr', items }))
  )
})).doc
const extraKey = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'id',
  'name', 'tag'))

/** Mostly near-valid NewPlants: id, name, maybe tag, extras, duplicates, in any order. */
const plantDoc: fc.Arbitrary<Doc> = fc.tuple(
  fc.option(idDoc, { freq: 10 }),
  fc.option(textDoc, { freq: 10 }),
  fc.option(textDoc, { freq: 2 }),
  fc.array(fc.tuple(extraKey, nestedDoc), { maxLength: 3 })
).chain(([id, name, tag, extras]) => {
  const entries: [string, Doc][] = [...extras]
  if (id !== null) entries.push(['id', id])
  if (name !== null) entries.push(['name', name])
  if (tag !== null) entries.push(['tag', tag])
  return fc.shuffledSubarray(entries, { minLength: entries.length, maxLength: entries.length })
}).map((entries): Doc => ({ t: 'obj', entries }))

const anyDoc: fc.Arbitrary<Doc> = fc.oneof(
  { weight: 6, arbitrary: plantDoc },
  { weight: 1, arbitrary: val(fc.jsonValue()) },
  { weight: 1, arbitrary: nestedDoc }
)

// Properties -----------------------------------------------------------------------------------

describe('hostile bodies (property tests)', () => {
  it('answers every JSON document with the status the model expects, stores exactly the valid NewPlants, and replays them', async () => {
    const app = await buildTestApp({ config: { BODY_LIMIT } })
    const store = new Map<bigint, Stored>()
    await fc.assert(fc.asyncProperty(anyDoc, async (doc) => {
      const text = serialize(doc)
      const expected = expectedFor(doc, text, store)
      const res = await postPlant(app, text)
      expectWellFormed(res)
      expect(res.statusCode, `${text.slice(0, 300)} → ${res.body}`).toBe(expected.status)
      if (expected.status !== 200) return
      expect(res.json()).toEqual(expected.plant)
      store.set(expected.id, expected.plant)
      // Stored exactly: the identical body is a safe retry; the same id with another name conflicts.
      const replay = await postPlant(app, text)
      expect(replay.statusCode).toBe(200)
      expect(replay.json()).toEqual(expected.plant)
      const otherText = JSON.stringify({ name: `${expected.plant.name}~`, tag: expected.plant.tag }).replace('{', `{"id":${expected.id},`)
      // A name near the limit can make the longer body too large: that is a 413 before any store.
      expect((await postPlant(app, otherText)).statusCode).toBe(Buffer.byteLength(otherText) > BODY_LIMIT ? 413 : 409)
    }), { numRuns: RUNS * 3 })
  }, 60000)

  it('never answers arbitrary bytes with a 5xx or an undocumented status', async () => {
    const app = await buildTestApp({ config: { BODY_LIMIT } })
    await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 3000 }), async (bytes) => {
      const res = await postPlant(app, Buffer.from(bytes))
      expectWellFormed(res)
      expect([200, 400, 409]).toContain(res.statusCode)
    }), { numRuns: RUNS })
  }, 60000)

  it('refuses a body that is not valid UTF-8 with 400 "body is not valid UTF-8", and stores nothing', async () => {
    const app = await buildTestApp()
    const strict = new TextDecoder('utf-8', { fatal: true })
    let id = 0
    await fc.assert(fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 4 }), fc.nat(4), async (junk, at) => {
      id++
      const name = Buffer.from('name-with-junk')
      const spliced = Buffer.concat([name.subarray(0, at), Buffer.from(junk), name.subarray(at)])
      const body = Buffer.concat([Buffer.from(`{"id":${id},"name":"`), spliced, Buffer.from('"}')])
      let valid = true
      try { strict.decode(body) } catch { valid = false }
      const res = await postPlant(app, body)
      expectWellFormed(res)
      if (valid) return
      expect(res.statusCode).toBe(400)
      expect(res.json()).toEqual({ error: 400, message: 'body is not valid UTF-8' })
      // Nothing was stored under this id: another plant with it is new, not a conflict.
      expect((await postPlant(app, JSON.stringify({ id, name: 'clean' }))).statusCode).toBe(200)
    }), { numRuns: RUNS })
  }, 60000)

  it('answers arbitrary Authorization values with 401 and a challenge, unless they carry the token', async () => {
    const app = await buildTestApp()
    const headerChar = fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.constant(0x09), fc.integer({
      min: 0x80,
      max: 0xff
    })).map((code) => String.fromCharCode(code))
    const authorization = fc.oneof(
      fc.string({ unit: headerChar, maxLength: 60 }),
      fc.constantFrom(`Bearer ${TOKEN}`, `bearer ${TOKEN}`, `BEARER  ${TOKEN} `, `Basic ${TOKEN}`, 'Bearer', 'Bearer ', TOKEN, `Bearer ${TOKEN}x`,
        `Bearer ${TOKEN.slice(1)}`, `Bearer\t${TOKEN}`),
      fc.string({ unit: headerChar, maxLength: 10 }).map((junk) => `Bearer ${TOKEN}${junk}`)
    )
    let id = 0
    await fc.assert(fc.asyncProperty(authorization, async (value) => {
      id++
      const res = await postPlant(app, JSON.stringify({ id, name: 'fern' }), { authorization: value, 'content-type': 'application/json' })
      expectWellFormed(res)
      const carriesToken = /^bearer /i.test(value) && value.slice(7).trim() === TOKEN
      expect(res.statusCode, JSON.stringify(value)).toBe(carriesToken ? 200 : 401)
      if (res.statusCode === 401) expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="plants"/)
    }), { numRuns: RUNS })
  }, 60000)
})

describe('hostile bodies (chosen cases)', () => {
  it('lets the last of duplicate keys win, as JSON.parse does', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, '{"id":1,"name":"first","name":"last","id":2}')
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ name: 'last' })
    expect((await postPlant(app, '{"id":2,"name":"last"}')).statusCode).toBe(200)
    expect((await postPlant(app, '{"id":1,"name":"first"}')).statusCode).toBe(200) // id 1 was never stored
    expect((await postPlant(app, '{"id":9007199254740993,"id":9007199254740995,"name":"big"}')).statusCode).toBe(200)
    expect((await postPlant(app, '{"id":9007199254740995,"name":"other"}')).statusCode).toBe(409)
  })

  it.each([
    ['a "__proto__" key', '{"id":1,"name":"a","__proto__":{"x":1}}'],
    ['a nested "__proto__" key', '{"id":1,"name":"a","x":[{"y":{"__proto__":null}}]}'],
    ['an escaped "__proto__" key', '{"id":1,"name":"a","\\u005f_proto__":{}}'],
    ['a "constructor.prototype" pair', '{"id":1,"name":"a","constructor":{"prototype":{"x":1}}}']
  ])('accepts %s and drops it (the document: extras are accepted and ignored), poisoning nothing', async (_what, body) => {
    const app = await buildTestApp()
    const res = await postPlant(app, body)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ name: 'a' })
    expect(({} as Record<string, unknown>).x).toBeUndefined()
    // Stored as the plant alone: the same plant again is the identical replay.
    expect((await postPlant(app, '{"id":1,"name":"a"}')).statusCode).toBe(200)
  })

  it('accepts "constructor" and "prototype" keys that poison nothing (ignored extras)', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, '{"id":1,"name":"a","constructor":1,"prototype":{"x":1}}')
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ name: 'a' })
  })

  it('accepts a valid plant with 8000 levels of nesting in an extra property', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, `{"id":1,"name":"deep","x":${'['.repeat(8000)}${']'.repeat(8000)}}`)
    expect(res.statusCode).toBe(200)
  })

  it('refuses nesting where the id should be with 400', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, `{"id":${'['.repeat(8000)}1${']'.repeat(8000)},"name":"deep"}`)
    expect(res.statusCode).toBe(400)
  })

  it('refuses huge numbers as ids with 400 and ignores them elsewhere', async () => {
    const app = await buildTestApp()
    for (const id of ['1e400', '-1e400', '1' + '0'.repeat(5000), '0.' + '0'.repeat(5000) + '1']) {
      expect((await postPlant(app, `{"id":${id},"name":"a"}`)).statusCode, id).toBe(400)
    }
    expect((await postPlant(app, `{"id":1,"name":"a","x":1e400,"y":${'9'.repeat(5000)}}`)).statusCode).toBe(200)
  })

  it('stores a name that fills the body exactly to BODY_LIMIT, and answers 413 one byte over', async () => {
    const app = await buildTestApp({ config: { BODY_LIMIT } })
    const frame = '{"id":1,"name":""}'
    const name = 'é'.repeat((BODY_LIMIT - frame.length) / 2)
    const body = `{"id":1,"name":"${name}"}`
    expect(Buffer.byteLength(body)).toBe(BODY_LIMIT)
    const res = await postPlant(app, body)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ name })
    const over = await postPlant(app, `{"id":2,"name":"${name}a"}`)
    expect(over.statusCode).toBe(413)
    expect(over.json()).toEqual({ error: 413, message: 'Request body is too large' })
  })

  it.each([
    ['a lone continuation byte', [0x80]],
    ['an overlong "/"', [0xc0, 0xaf]],
    ['a UTF-8-encoded surrogate', [0xed, 0xa0, 0x80]],
    ['a truncated sequence', [0xe2, 0x82]],
    ['a code point above U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
    ['0xFF', [0xff]]
  ])('refuses %s in a name with 400 instead of storing U+FFFD', async (_what, bytes) => {
    const app = await buildTestApp()
    const body = Buffer.concat([Buffer.from('{"id":1,"name":"a'), Buffer.from(bytes), Buffer.from('"}')])
    const res = await postPlant(app, body)
    expect(res.statusCode).toBe(400)
    expect(res.json()).toEqual({ error: 400, message: 'body is not valid UTF-8' })
    expect((await postPlant(app, '{"id":1,"name":"a\ufffd"}')).statusCode).toBe(200) // nothing was stored under id 1
  })
})
