import { randomUUID } from 'node:crypto'
import createClient from 'openapi-fetch'
import { describe, expect, it } from 'vitest'
import type { paths } from '../../openapi/plant-store.js'
import { E2E_TOKEN, startServer } from './server-process.js'

// A client as a client developer writes it: openapi-fetch typed by openapi/plant-store.d.ts (the types
// openapi-typescript generates from openapi/openapi.json), against the built server over real HTTP.
const BIG_ID_MESSAGE = 'a plant with id 9007199254740993 already exists with another name or tag'

async function client (options: { token?: string, bodySerializer?: (body: unknown) => string } = {}) {
  const server = await startServer({})
  const { token = E2E_TOKEN, ...rest } = options
  return createClient<paths>({ baseUrl: server.url, headers: { authorization: `Bearer ${token}` }, ...rest })
}

/**
 * The JSON text of a body with every bigint written as its exact digits. JSON.stringify throws on a
 * bigint, and a replacer can only turn one into a string: each becomes a quoted marker, unique to
 * this call, whose quotes are then removed. (docs/api.md, "Ids beyond 2^53 from JavaScript".)
 */
function jsonWithBigInts (body: unknown): string {
  const marker = `bigint-${randomUUID()}:`
  return JSON.stringify(body, (_key, value: unknown) => typeof value === 'bigint' ? marker + value.toString() : value)
    .replaceAll(new RegExp(`"${marker}(-?\\d+)"`, 'g'), '$1')
}

/** Node 22+ (every supported runtime): JSON.rawJSON writes the digits itself. Not in TypeScript's ES2024 lib. */
const { rawJSON } = JSON as unknown as { rawJSON: (text: string) => unknown }

describe('a client generated from the committed document (openapi-fetch + openapi-typescript)', () => {
  it('200: creates a plant and reads the typed Plant', async () => {
    const plants = await client()
    const { data, error, response } = await plants.POST('/plants', { body: { id: 10, name: 'Monstera', tag: 'tropical' } })
    expect(response.status).toBe(200)
    expect(error).toBeUndefined()
    expect(data).toEqual({ name: 'Monstera', tag: 'tropical' })
  })

  it('400: an id that is not an integer comes back as the typed Error record', async () => {
    const plants = await client()
    const { data, error, response } = await plants.POST('/plants', { body: { id: 1.5, name: 'Monstera' } })
    expect(response.status).toBe(400)
    expect(data).toBeUndefined()
    expect(error).toEqual({ error: 400, message: 'body/id must be an integer between -9223372036854775808 and 9223372036854775807' })
  })

  it('401: a token that is not accepted, with WWW-Authenticate', async () => {
    const plants = await client({ token: 'not-the-token' })
    const { error, response } = await plants.POST('/plants', { body: { id: 10, name: 'Monstera' } })
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="plants", error="invalid_token"')
    expect(error).toEqual({ error: 401, message: 'invalid authorization header' })
  })

  it('409: another plant with a stored id', async () => {
    const plants = await client()
    expect((await plants.POST('/plants', { body: { id: 10, name: 'Monstera' } })).response.status).toBe(200)
    const { error, response } = await plants.POST('/plants', { body: { id: 10, name: 'Fern' } })
    expect(response.status).toBe(409)
    expect(error).toEqual({ error: 409, message: 'a plant with id 10 already exists with another name or tag' })
  })

  it('405: GET /plants is not in the document (a type error) and the service answers 405 with Allow: POST', async () => {
    const plants = await client()
    // @ts-expect-error The document has no GET /plants, so the generated types refuse it.
    const { error, response } = await plants.GET('/plants')
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('POST')
    expect(error).toEqual({ error: 405, message: 'GET is not allowed on /plants; allowed: POST' })
  })

  it('sends an id beyond 2^53 exactly with a body serializer that writes the bigint\'s digits (any runtime, browsers included)', async () => {
    expect(() => JSON.stringify({ id: 9007199254740993n })).toThrow(TypeError)
    expect(jsonWithBigInts({ id: 9007199254740993n, name: 'Fern "9007199254740993n"' })).toBe('{"id":9007199254740993,"name":"Fern \\"9007199254740993n\\""}')
    const plants = await client({ bodySerializer: jsonWithBigInts })
    expect((await plants.POST('/plants', { body: { id: 9007199254740993n, name: 'Fern' } })).response.status).toBe(200)
    // 9007199254740992 is another plant: the digits arrived exactly, not rounded to the nearest double.
    expect((await plants.POST('/plants', { body: { id: 9007199254740992, name: 'Monstera' } })).response.status).toBe(200)
    const { error, response } = await plants.POST('/plants', { body: { id: 9007199254740993n, name: 'Monstera' } })
    expect(response.status).toBe(409)
    expect(error).toEqual({ error: 409, message: BIG_ID_MESSAGE })
  })

  it('sends an id beyond 2^53 exactly with JSON.rawJSON (Node 22+)', async () => {
    const withRawJSON = (body: unknown) => JSON.stringify(body, (_key, value: unknown) => typeof value === 'bigint' ? rawJSON(value.toString()) : value)
    const plants = await client({ bodySerializer: withRawJSON })
    expect((await plants.POST('/plants', { body: { id: 9007199254740993n, name: 'Fern' } })).response.status).toBe(200)
    const { error } = await plants.POST('/plants', { body: { id: 9007199254740993n, name: 'Monstera' } })
    expect(error).toEqual({ error: 409, message: BIG_ID_MESSAGE })
  })
})
