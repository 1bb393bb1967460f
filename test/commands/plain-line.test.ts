import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { lineOf, plainLine, type Row } from '../../src/commands/store.js'
import { parseBody } from '../../src/plugins/json-body.js'
import { INT64_MAX, INT64_MIN, NewPlant } from '../../src/schemas.js'
import { validatorCompiler } from '../../src/validation.js'

// import and verify read a line through plainLine first, and through parseBody when it gives nothing
// (src/commands/plant-store.ts): either way the schema checks the plant, as it checks a request body.
const validate = validatorCompiler({ schema: NewPlant, method: 'POST', url: '/plants', httpPart: 'body' })
const checked = (plant: unknown) => {
  const { value, error } = validate(plant) as { value?: unknown, error?: Error }
  return value ?? error?.message
}
const asBody = (bytes: Buffer) => {
  try {
    return checked(parseBody(bytes, undefined, 1 << 20))
  } catch (error) {
    return (error as Error).message
  }
}
const asImport = (bytes: Buffer) => {
  const plant = plainLine(bytes.toString())
  return plant === undefined ? asBody(bytes) : checked(plant)
}

const ids = [0n, 1n, -1n, 7n, 2n ** 53n - 1n, 2n ** 53n, -(2n ** 53n) - 1n, 10n ** 18n, INT64_MIN, INT64_MAX]
const plants: Row[] = ids.flatMap((id) => [
  { id, name: 'Monstera', tag: 'tropical' },
  { id, name: '', tag: null },
  { id, name: '🌱 Ünïcödé ✓ DEL-free', tag: '' }
])

describe('plainLine: the export\'s own lines read without the JSON parser', () => {
  it('reads each export line of a plant without escapes as parseBody does: the same id (a number while safe, else a bigint), name and tag', () => {
    for (const row of plants) {
      const line = lineOf(row)
      const plant = plainLine(line)
      expect(plant, line).toBeDefined()
      expect(plant, line).toStrictEqual(parseBody(Buffer.from(line), undefined, 1 << 20))
    }
  })

  it('takes 19-digit ids past int64 too, which the schema then refuses with the API\'s message', () => {
    for (const digits of ['9223372036854775808', '9999999999999999999', '-9223372036854775809']) {
      const line = Buffer.from(`{"id":${digits},"name":"a"}`)
      expect(plainLine(line.toString())).toStrictEqual({ id: BigInt(digits), name: 'a' })
      expect(asImport(line)).toBe(asBody(line))
      expect(asImport(line)).toMatch(/^body\/id must be an integer between/)
    }
  })

  it('leaves to the parser every other line: escapes, control characters, numbers spelt otherwise, spaces, other keys, a BOM', () => {
    const others = [
      '{"id":1,"name":"a\\"b"}', '{"id":1,"name":"a\\u0041"}', '{"id":1,"name":"a","tag":"b\\\\"}',
      '{"id":1,"name":"a\tb"}', '{"id":1,"name":"a\u0000"}', '{"id":1,"name":"a\u007f"}', '{"id":1,"name":"a\u0085"}',
      '{"id":01,"name":"a"}', '{"id":-0,"name":"a"}', '{"id":1.0,"name":"a"}', '{"id":1e3,"name":"a"}', '{"id":+1,"name":"a"}',
      '{"id":12345678901234567890,"name":"a"}', '{"id":"1","name":"a"}',
      '{ "id":1,"name":"a"}', '{"id": 1,"name":"a"}', '{"id":1,"name":"a"} ', ' {"id":1,"name":"a"}',
      '{"id":1,"name":"a","tag":"b","x":1}', '{"name":"a","id":1}', '{"id":1,"tag":"b","name":"a"}', '{"id":1}',
      '{"id":1,"name":"a","tag":null}', '\uFEFF{"id":1,"name":"a"}', '{"id":1,"name":"a"}x', '{"id":1,"name":"a"}\n',
      '{"id":1,"name":"\uFFFD"}'
    ]
    for (const line of others) {
      expect(plainLine(line), line).toBeUndefined()
      expect(asImport(Buffer.from(line)), line).toStrictEqual(asBody(Buffer.from(line)))
    }
  })

  it('leaves a line with a byte that is not UTF-8, in its name or tag, to the parser, which refuses it', () => {
    for (const [before, after] of [['{"id":1,"name":"a', '"}'], ['{"id":1,"name":"a","tag":"b', '"}']]) {
      const line = Buffer.concat([Buffer.from(before as string), Buffer.from([0xff]), Buffer.from(after as string)])
      expect(plainLine(line.toString())).toBeUndefined()
      expect(asImport(line)).toBe('body is not valid UTF-8')
    }
  })

  it('reads any line as a request body is read: the same plant or the same message (fast-check)', () => {
    const id = fc.oneof(fc.bigInt(INT64_MIN, INT64_MAX), fc.bigInt(-(10n ** 19n) + 1n, 10n ** 19n - 1n), fc.bigInt(-9n, 9n))
    const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }))
    fc.assert(fc.property(id, text, fc.option(text), (id, name, tag) => {
      const line = Buffer.from(lineOf({ id, name, tag }))
      expect(asImport(line)).toStrictEqual(asBody(line))
    }), { numRuns: 2000 })
  })
})
