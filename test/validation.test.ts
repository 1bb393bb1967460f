import { Type } from '@sinclair/typebox'
import { describe, expect, it } from 'vitest'
import { NewPlant } from '../src/schemas.js'
import { validatorCompiler } from '../src/validation.js'

/** The validator Fastify would get for `schema` on `httpPart`, and what it says about `value`. */
function validate (schema: Parameters<typeof validatorCompiler>[0]['schema'], value: unknown, httpPart?: string) {
  const check = validatorCompiler({
    schema,
    method: 'POST',
    url: '/plants',
    ...(httpPart === undefined
      ? {}
      : { httpPart })
  }) as (value: unknown) => { value?: unknown, error?: Error }
  return check(value)
}
const problem = (schema: Parameters<typeof validatorCompiler>[0]['schema'], value: unknown, httpPart?: string) => validate(schema, value,
  httpPart).error?.message

describe('validatorCompiler: the first problem, in words a caller can act on', () => {
  it('passes a valid value through as it is (no coercion, extra properties kept)', () => {
    const body = { id: 2n ** 60n, name: 'fern', extra: [1] }
    expect(validate(NewPlant, body)).toEqual({ value: body })
    expect(validate(NewPlant, body).value).toBe(body)
  })

  it('names a missing property with its path under the HTTP part (body when Fastify gives none)', () => {
    expect(problem(NewPlant, { name: 'fern' })).toBe('body/id is required')
    expect(problem(NewPlant, { name: 'fern' }, 'querystring')).toBe('querystring/id is required')
  })

  it('gives the int64 range for an id that is not an int64', () => {
    for (const id of ['1', 1.5, 2n ** 63n, -(2n ** 63n) - 1n, Number.NaN]) {
      expect(problem(NewPlant, { id, name: 'fern' }), String(id)).toBe('body/id must be an integer between -9223372036854775808 and 9223372036854775807')
    }
  })

  it('says which characters a text cannot hold', () => {
    expect(problem(NewPlant, { id: 1, name: 'a\u0000b' })).toBe('body/name must not contain U+0000 or unpaired surrogates')
    expect(problem(NewPlant, { id: 1, name: 'fern', tag: '\uD800' })).toBe('body/tag must not contain U+0000 or unpaired surrogates')
  })

  it('asks for a JSON object where the body is not one', () => {
    for (const body of [[], 'fern', 1, null]) expect(problem(NewPlant, body), JSON.stringify(body)).toBe('body must be a JSON object')
  })

  it('asks for a string where a text is not one', () => {
    expect(problem(NewPlant, { id: 1, name: 7 })).toBe('body/name must be a string')
    expect(problem(NewPlant, { id: 1, name: 'fern', tag: null })).toBe('body/tag must be a string')
  })

  it('words any other problem as TypeBox does, starting in lower case', () => {
    expect(problem(Type.Object({ n: Type.Integer({ maximum: 3 }) }), { n: 4 })).toBe('body/n expected integer to be less or equal to 3')
  })
})
