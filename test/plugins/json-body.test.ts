import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib'
import fc from 'fast-check'
import { Value } from '@sinclair/typebox/value'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { JSON_AUTH, buildTestApp, postPlant } from '../helpers.js'
import type { App } from '../../src/app.js'
import { parseBody } from '../../src/plugins/json-body.js'
import { NewPlant } from '../../src/schemas.js'

const FERN = '{"id":1,"name":"fern","tag":"shade"}'
const PLANT = { name: 'fern', tag: 'shade' }

function postEncoded (app: App, body: Buffer, encoding: string) {
  return app.inject({ method: 'POST', url: '/plants', headers: { ...JSON_AUTH, 'content-encoding': encoding }, payload: body })
}

/** Whether id 1 is stored: a replay of another plant with id 1 is a 409 then, a 200 otherwise. */
async function isStored (app: App): Promise<boolean> {
  return (await postPlant(app, { id: 1, name: 'probe' })).statusCode === 409
}

const unsupported = (coding: string) => ({
  error: 415,
  message: `content-encoding "${coding}" is not supported: send the body with one of gzip, deflate, br, or with none`
})

describe('request bodies with a content coding (RFC 9110 §8.4)', () => {
  it('decodes a gzip body and stores the plant it holds', async () => {
    const app = await buildTestApp()
    const res = await postEncoded(app, gzipSync(FERN), 'gzip')
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual(PLANT)
    expect(await isStored(app)).toBe(true)
  })

  it('decodes deflate (the zlib format) and br bodies', async () => {
    const app = await buildTestApp()
    expect((await postEncoded(app, deflateSync(FERN), 'deflate')).json()).toEqual(PLANT)
    const br = await postEncoded(app, brotliCompressSync('{"id":2,"name":"moss"}'), 'br')
    expect(br.statusCode).toBe(200)
    expect(br.json()).toEqual({ name: 'moss' })
  })

  it('compares coding names case-insensitively and takes x-gzip as gzip', async () => {
    const app = await buildTestApp()
    for (const [id, coding] of [[1, 'GZIP'], [2, 'x-gzip'], [3, ' Gzip ']] as const) {
      const res = await postEncoded(app, gzipSync(`{"id":${id},"name":"fern"}`), coding)
      expect(res.statusCode, coding).toBe(200)
    }
  })

  it('takes identity or an empty header as no coding, and refuses a list of codings (one coding at most) with 415', async () => {
    const app = await buildTestApp()
    for (const coding of ['gzip, identity', 'identity,gzip', 'gzip, gzip']) {
      expect((await postEncoded(app, gzipSync(FERN), coding)).json(), coding).toEqual(unsupported(coding))
    }
    expect(await isStored(app)).toBe(false)
    expect((await postEncoded(app, Buffer.from('{"id":2,"name":"fern"}'), ' Identity ')).statusCode).toBe(200)
    expect((await postEncoded(app, Buffer.from('{"id":3,"name":"fern"}'), '')).statusCode).toBe(200)
  })

  it('keeps the int64 id exact and checks UTF-8 after decoding', async () => {
    const app = await buildTestApp()
    const big = await postEncoded(app, gzipSync('{"id":9007199254740993,"name":"a"}'), 'gzip')
    expect(big.statusCode).toBe(200)
    expect((await postPlant(app, { id: 9007199254740992, name: 'b' })).statusCode).toBe(200)
    const latin1 = await postEncoded(app, gzipSync(Buffer.from([...Buffer.from('{"id":5,"name":"'), 0xe9, ...Buffer.from('"}')])), 'gzip')
    expect(latin1.statusCode).toBe(400)
    expect(latin1.json()).toEqual({ error: 400, message: 'body is not valid UTF-8' })
  })

  it('answers 415 Error with Accept-Encoding for a coding it does not decode, and stores nothing', async () => {
    const app = await buildTestApp()
    const res = await postEncoded(app, Buffer.from(FERN), 'x-unknown')
    expect(res.statusCode).toBe(415)
    expect(res.headers['accept-encoding']).toBe('gzip, deflate, br')
    expect(res.json()).toEqual(unsupported('x-unknown'))
    expect(await isStored(app)).toBe(false)
    // A long name is quoted up to its first 100 characters.
    const long = await postEncoded(app, Buffer.from(FERN), 'x'.repeat(150))
    expect(long.json()).toEqual(unsupported('x'.repeat(100)))
  })

  it('answers 415 for compress and zstd too (not decoded here)', async () => {
    const app = await buildTestApp()
    for (const coding of ['compress', 'zstd']) {
      const res = await postEncoded(app, Buffer.from(FERN), coding)
      expect(res.statusCode, coding).toBe(415)
      expect(res.json(), coding).toEqual(unsupported(coding))
    }
  })

  it('answers 415 for more than one coding (gzip of gzip), and stores nothing', async () => {
    const app = await buildTestApp()
    const res = await postEncoded(app, gzipSync(gzipSync(FERN)), ' gzip, gzip ')
    expect(res.statusCode).toBe(415)
    expect(res.headers['accept-encoding']).toBe('gzip, deflate, br')
    expect(res.json()).toEqual(unsupported('gzip, gzip'))
    expect(await isStored(app)).toBe(false)
  })

  it('answers 400 Error for a corrupt or truncated gzip body, and for raw deflate sent as deflate', async () => {
    const app = await buildTestApp()
    const gzip = gzipSync(FERN)
    const corrupt = Buffer.from(gzip)
    corrupt[12] = (corrupt[12] ?? 0) ^ 0xff
    for (const body of [Buffer.from(FERN), gzip.subarray(0, gzip.length - 6), corrupt]) {
      const res = await postEncoded(app, body, 'gzip')
      expect(res.statusCode).toBe(400)
      expect(res.json()).toEqual({ error: 400, message: 'body is not valid gzip data' })
    }
    const raw = await postEncoded(app, deflateRawSync(FERN), 'deflate')
    expect(raw.json()).toEqual({ error: 400, message: 'body is not valid deflate data' })
    // x-gzip is named gzip, the coding it is.
    expect((await postEncoded(app, Buffer.from(FERN), 'x-gzip')).json()).toEqual({ error: 400, message: 'body is not valid gzip data' })
    expect((await postEncoded(app, Buffer.from(FERN), 'br')).json()).toEqual({ error: 400, message: 'body is not valid br data' })
    expect(await isStored(app)).toBe(false)
  })

  it('answers 413 Error when the decoded body is over BODY_LIMIT, even when the encoded one is small', async () => {
    const app = await buildTestApp({ config: { BODY_LIMIT: 100 } })
    const body = gzipSync(JSON.stringify({ id: 1, name: 'x'.repeat(200) }))
    expect(body.length).toBeLessThan(100)
    const res = await postEncoded(app, body, 'gzip')
    expect(res.statusCode).toBe(413)
    expect(res.json()).toEqual({ error: 413, message: 'Request body is too large' })
    expect(await isStored(app)).toBe(false)
  })

  it('accepts a decoded body of exactly BODY_LIMIT bytes', async () => {
    const text = '{"id":1,"name":"' + 'x'.repeat(100 - 18) + '"}'
    expect(text.length).toBe(100)
    const app = await buildTestApp({ config: { BODY_LIMIT: 100 } })
    expect((await postEncoded(app, gzipSync(text), 'gzip')).statusCode).toBe(200)
  })

  it('answers 413 for a gzip bomb (10 MB of zeros in 10 kB); test/e2e/http-semantics.test.ts shows it costs no memory', async () => {
    const app = await buildTestApp()
    const bomb = gzipSync(Buffer.alloc(10 * 2 ** 20), { level: 9 })
    expect(bomb.length).toBeLessThan(16384)
    const res = await postEncoded(app, bomb, 'gzip')
    expect(res.statusCode).toBe(413)
    expect(res.json()).toEqual({ error: 413, message: 'Request body is too large' })
  })

  it('answers 413 as before when the encoded body itself is over BODY_LIMIT', async () => {
    const app = await buildTestApp({ config: { BODY_LIMIT: 100 } })
    const res = await postEncoded(app, Buffer.alloc(200), 'gzip')
    expect(res.statusCode).toBe(413)
    expect(res.json()).toEqual({ error: 413, message: 'Request body is too large' })
  })

  it('parses the bodies of routes outside its own scope: an unknown content type on /plants is a 415 in Fastify\'s words', async () => {
    const res = await postPlant(await buildTestApp(), FERN, { ...JSON_AUTH, 'content-type': 'text/plain' })
    expect([res.statusCode, res.json()]).toEqual([415, { error: 415, message: 'Unsupported Media Type' }])
  })

  it('checks the token before the coding: no token with an unknown coding is a 401', async () => {
    const app = await buildTestApp()
    const res = await app.inject({
      method: 'POST',
      url: '/plants',
      headers: { 'content-type': 'application/json', 'content-encoding': 'x-unknown' },
      payload: FERN
    })
    expect(res.statusCode).toBe(401)
    expect(res.headers['accept-encoding']).toBeUndefined()
  })
})

const parse = (text: string): unknown => parseBody(Buffer.from(text), undefined, 2 ** 20)
const idOf = (literal: string): unknown => (parse(`{"id":${literal}}`) as { id: unknown }).id
const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n }

describe('parseBody: JSON with exact int64 ids', () => {
  it('gives numbers for safe integers and bigints beyond, exactly', () => {
    expect(idOf('42')).toBe(42)
    expect(idOf('9007199254740991')).toBe(9007199254740991)
    expect(idOf('-9007199254740991')).toBe(-9007199254740991)
    expect(idOf('9007199254740992')).toBe(9007199254740992n)
    expect(idOf('9007199254740993')).toBe(9007199254740993n)
    expect(idOf('9223372036854775807')).toBe(9223372036854775807n)
    expect(idOf('-9223372036854775808')).toBe(-9223372036854775808n)
  })

  it('reads fractions and exponents as the integers they are, safe ones as numbers', () => {
    const cases: [string, number | bigint][] = [
      ['5.000', 5], ['1.0', 1], ['1E2', 100], ['1e+2', 100], ['12.5e1', 125], ['1000e-3', 1], ['10.50e1', 105], ['-0.0', 0],
      ['0.0e99999999999', 0], ['0.00000000000000000001e20', 1], ['1' + '0'.repeat(500) + 'e-500', 1],
      ['92233720368547758.07e2', 9223372036854775807n], ['9223372036854775807.0', 9223372036854775807n],
      ['-92233720368547758080e-1', -9223372036854775808n], ['9007199254740993.0', 9007199254740993n]
    ]
    for (const [literal, id] of cases) expect(idOf(literal), literal).toBe(id)
  })

  it('gives an id the schema refuses for non-integers and values beyond int64, however they are written', () => {
    const literals = ['1.5', '1.0000000000000001', '0.99999999999999999999', '1e-1', '1e-400', '1E-400', '1e-99999999999', '9223372036854775808',
      '-9223372036854775809', '9223372036854775807.5', '1e19', '1e400', '1e99999999999', '-1e99999999999']
    for (const literal of literals) expect(Value.Check(NewPlant, { id: idOf(literal), name: 'fern' }), literal).toBe(false)
  })

  it('keeps every int64 exact, written plainly or with a fraction, wherever the id stands among other members', () => {
    const others = fc.dictionary(fc.string().filter((key) => !['id', '__proto__', 'constructor'].includes(key)), fc.jsonValue(), { maxKeys: 4 })
    fc.assert(fc.property(fc.bigInt(INT64), others, fc.boolean(), fc.boolean(), (id, rest, idFirst, fraction) => {
      const members = [`"id":${id}${fraction ? '.000' : ''}`, JSON.stringify(rest).slice(1, -1)].filter((m) => m !== '')
      const value = parse(`{${(idFirst ? members : members.reverse()).join(',')}}`) as { id: unknown }
      expect(BigInt(value.id as bigint)).toBe(id)
      expect(typeof value.id).toBe(id >= -(2n ** 53n) + 1n && id <= 2n ** 53n - 1n ? 'number' : 'bigint')
    }), { numRuns: 500 })
  })

  it('keeps every int64 exact in a body as clients send it, with any JSON whitespace around the id and its key', () => {
    const ws = fc.stringMatching(/^[ \t\n\r]{0,3}$/)
    fc.assert(fc.property(fc.bigInt(INT64), fc.tuple(ws, ws, ws, ws), fc.string(), fc.boolean(), (id, [a, b, c, d], name, idFirst) => {
      const member = `${a}"id"${b}:${c}${id}${d}`
      const text = idFirst ? `{${member},"name":${JSON.stringify(name)}}` : `{"name":${JSON.stringify(name)},${member}}`
      const value = parse(text) as { id: unknown, name: unknown }
      expect([value.id, value.name]).toStrictEqual([Number.isSafeInteger(Number(id)) ? Number(id) : id, name])
    }), { numRuns: 1000 })
  })

  it('reads a 19-digit id beside 100,000 levels of nesting: its literal is read without a reviver', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000)
    for (const id of [9223372036854775807n, -9223372036854775808n, 1234567890000000001n, 9007199254740993n]) {
      expect((parse(`{"id":${id},"name":"fern","tag":"shade","x":${deep}}`) as { id: unknown }).id, String(id)).toBe(id)
    }
    expect((parse(`{"x":${deep},"id":-12345678901234567,"tag":"1.5"}`) as { id: unknown }).id).toBe(-12345678901234567n)
  })

  it('reads the id exactly when its key is not alone in the text: a string "id", a nested or a repeated id (the last wins), an escape', () => {
    const cases: [string, unknown][] = [
      ['{"name":"id","id":9007199254740993}', 9007199254740993n],
      ['{"a":{"id":1},"id":9007199254740993}', 9007199254740993n],
      ['{"id":9007199254740995,"a":[{"id":"x"}]}', 9007199254740995n],
      ['{"id":1,"id":9007199254740993}', 9007199254740993n],
      ['{"id":9007199254740993,"id":2}', 2],
      ['{"name":"a \\"quoted\\" fern","id":9007199254740993}', 9007199254740993n],
      ['{"id":9007199254740993.0e0}', 9007199254740993n]
    ]
    for (const [text, id] of cases) expect((parse(text) as { id: unknown }).id, text).toBe(id)
  })

  it('gives an id the schema refuses for an integer literal beyond int64, however long', () => {
    for (const literal of ['9223372036854775808', '-9223372036854775809', '12345678901234567890123', '9'.repeat(16000)]) {
      expect(Value.Check(NewPlant, parse(`{"id":${literal},"name":"fern"}`)), literal.slice(0, 30)).toBe(false)
    }
  })

  it('never turns an integer literal beyond 2^63 into a bigint to refuse it: BigInt takes 165 ms for a million digits', () => {
    const bigInt = vi.spyOn(globalThis, 'BigInt')
    onTestFinished(() => { bigInt.mockRestore() })
    expect(Value.Check(NewPlant, parse(`{"id":${'9'.repeat(100_000)},"name":"fern"}`))).toBe(false)
    expect(bigInt.mock.calls.map(([literal]) => String(literal).length).filter((length) => length > 20)).toEqual([])
  })

  it('parses like JSON.parse when no id is involved', () => {
    fc.assert(fc.property(fc.json(), (text) => {
      fc.pre(!text.includes('"id"') && !text.includes('__proto__') && !text.includes('constructor'))
      expect(parse(text)).toStrictEqual(JSON.parse(text))
    }))
  })

  it('changes no other member, and keeps an id that is not a number as it is (the schema refuses it)', () => {
    expect(parse('{"id":"9007199254740993","x":1.5,"y":1e400,"n":9007199254740993}')).toStrictEqual(
      { id: '9007199254740993', x: 1.5, y: Infinity, n: 9007199254740992 })
  })

  it('reads the top-level id among nested ones and strings that look like numbers, also when its key is escaped', () => {
    const text = '{"a":{"id":1.5},"b":["\\"id\\":1.5"],"\\u0069d" : 9007199254740995,"c":"1e5","d":"id"}'
    expect((parse(text) as { id: unknown }).id).toBe(9007199254740995n)
  })

  it('keeps ids exact beside 100,000 levels of nesting, as long as no number literal needs the exact reading', () => {
    // A reviver would overflow V8's stack there, in a worker thread's larger stack too (8,000 levels fit in one:
    // mutation testing runs there); these literals (15 digits at most, no fraction) skip it.
    const deep = '['.repeat(100_000) + ']'.repeat(100_000)
    for (const id of ['1', '123456789012345', '-123456789012345']) {
      const value = parse(`{"id":${id},"name":"v1 e2","x":${deep}}`) as { id: unknown }
      expect(value.id, id).toBe(Number(id))
    }
  })

  it('drops prototype-poisoning keys, at any depth, also when escaped, and keeps the rest', () => {
    for (const text of ['{"__proto__":{"x":1},"id":1}', '{"\\u005f_proto__":{"x":1},"id":1.0}', '{"constructor":{"prototype":{"x":1}},"id":1}']) {
      const value = parse(text) as Record<string, unknown>
      expect(value, text).toStrictEqual({ id: 1 })
      expect(Object.getPrototypeOf(value), text).toBe(Object.prototype)
    }
    expect(parse('{"id":1,"x":[{"__proto__":{"y":1},"z":2}]}')).toStrictEqual({ id: 1, x: [{ z: 2 }] })
    // A "constructor" that is no prototype carrier is an ordinary key.
    expect(parse('{"constructor":1}')).toEqual({ constructor: 1 })
  })

  it('throws the 400 "body is not valid JSON" for text that is not JSON, and "not valid UTF-8" for bad bytes', () => {
    expect(() => parse('{"id":1,')).toThrow(expect.objectContaining({ statusCode: 400, message: 'body is not valid JSON' }))
    expect(() => parse('{"id":1.5,')).toThrow(expect.objectContaining({ statusCode: 400, message: 'body is not valid JSON' }))
    expect(() => parseBody(Buffer.from([0x22, 0xff, 0x22]), undefined, 100)).toThrow('body is not valid UTF-8')
  })
})
