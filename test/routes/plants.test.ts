import { describe, expect, it } from 'vitest'
import { StoreOutcomeUnknownError, StoreUnavailableError } from '../../src/errors.js'
import type { PlantRepository } from '../../src/plants/plant-repository.js'
import { AUTH, JSON_AUTH, buildTestApp, postPlant } from '../helpers.js'

const ID_RANGE = 'body/id must be an integer between -9223372036854775808 and 9223372036854775807'
const badRequest = (message: string) => ({ error: 400, message })

describe('POST /plants: success', () => {
  it('answers 200 with the Plant when the plant is new', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, { id: 1, name: 'fern' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(res.body).toBe('{"name":"fern"}')
  })

  it('answers with the tag when one was given', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, { id: 1, name: 'fern', tag: 'shade' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe('{"name":"fern","tag":"shade"}')
  })

  it('accepts and ignores unknown extra properties, never echoing them or the id', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, { id: 1, name: 'fern', colour: 'green', nested: { a: [1, 2] } })
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe('{"name":"fern"}')
  })

  it('stores name and tag exactly as sent (unicode, whitespace, empty)', async () => {
    const app = await buildTestApp()
    const plant = { id: 1, name: '  Monstera 🌿 déliciosa\tא ', tag: '' }
    const res = await postPlant(app, plant)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ name: plant.name, tag: '' })
    expect((await postPlant(app, plant)).statusCode).toBe(200)
    expect((await postPlant(app, { ...plant, name: plant.name.trim() })).statusCode).toBe(409)
  })

  it('accepts the JSON content type with a charset parameter and in capitals', async () => {
    const app = await buildTestApp()
    expect((await postPlant(app, { id: 1, name: 'a' }, { ...AUTH, 'content-type': 'application/json; charset=utf-8' })).statusCode).toBe(200)
    expect((await postPlant(app, { id: 2, name: 'a' }, { ...AUTH, 'content-type': 'APPLICATION/JSON' })).statusCode).toBe(200)
  })
})

describe('POST /plants: the same id twice', () => {
  it('answers 200 again when the identical plant is sent again (safe retry)', async () => {
    const app = await buildTestApp()
    await postPlant(app, { id: 7, name: 'fern', tag: 'shade' })
    const res = await postPlant(app, { id: 7, name: 'fern', tag: 'shade' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ name: 'fern', tag: 'shade' })
  })

  it('answers 409 Error when the id exists with another name, and keeps the stored plant', async () => {
    const app = await buildTestApp()
    await postPlant(app, { id: 7, name: 'fern' })
    const res = await postPlant(app, { id: 7, name: 'cactus' })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 409, message: 'a plant with id 7 already exists with another name or tag' })
    expect((await postPlant(app, { id: 7, name: 'fern' })).statusCode).toBe(200)
  })

  it('answers 409 when only the tag differs, or when one has a tag and the other none', async () => {
    const app = await buildTestApp()
    await postPlant(app, { id: 1, name: 'fern', tag: 'a' })
    await postPlant(app, { id: 2, name: 'fern' })
    expect((await postPlant(app, { id: 1, name: 'fern', tag: 'b' })).statusCode).toBe(409)
    expect((await postPlant(app, { id: 1, name: 'fern' })).statusCode).toBe(409)
    expect((await postPlant(app, { id: 2, name: 'fern', tag: '' })).statusCode).toBe(409)
  })

  it('treats extra properties as no part of the plant on replay', async () => {
    const app = await buildTestApp()
    await postPlant(app, { id: 1, name: 'fern', extra: 1 })
    expect((await postPlant(app, { id: 1, name: 'fern', extra: 2 })).statusCode).toBe(200)
  })
})

describe('POST /plants: int64 ids are exact', () => {
  it('keeps 2^53 and 2^53 + 1 apart (JSON.parse would round both to 2^53)', async () => {
    const app = await buildTestApp()
    expect((await postPlant(app, '{"id":9007199254740992,"name":"a"}')).statusCode).toBe(200)
    expect((await postPlant(app, '{"id":9007199254740993,"name":"b"}')).statusCode).toBe(200)
    expect((await postPlant(app, '{"id":9007199254740993,"name":"a"}')).statusCode).toBe(409)
    expect((await postPlant(app, '{"id":9007199254740992,"name":"b"}')).statusCode).toBe(409)
  })

  it('accepts the int64 maximum 9223372036854775807 and tells it from its neighbour', async () => {
    const app = await buildTestApp()
    expect((await postPlant(app, '{"id":9223372036854775807,"name":"max"}')).statusCode).toBe(200)
    expect((await postPlant(app, '{"id":9223372036854775806,"name":"other"}')).statusCode).toBe(200)
    expect((await postPlant(app, '{"id":9223372036854775807,"name":"other"}')).statusCode).toBe(409)
  })

  it('accepts the int64 minimum -9223372036854775808', async () => {
    const app = await buildTestApp()
    expect((await postPlant(app, '{"id":-9223372036854775808,"name":"min"}')).statusCode).toBe(200)
    expect((await postPlant(app, '{"id":-9223372036854775808,"name":"x"}')).statusCode).toBe(409)
  })

  it('answers 400 for the int64 maximum + 1 and minimum - 1', async () => {
    const app = await buildTestApp()
    for (const id of ['9223372036854775808', '-9223372036854775809', '18446744073709551616']) {
      const res = await postPlant(app, `{"id":${id},"name":"a"}`)
      expect(res.statusCode).toBe(400)
      expect(res.json()).toEqual(badRequest(ID_RANGE))
    }
  })

  it('answers 400 for ids that are not integers: 1.5, 1e400, 1.0000000000000001', async () => {
    const app = await buildTestApp()
    for (const id of ['1.5', '1e400', '-1e400', '1.0000000000000001', '9007199254740993.5', '1e-7']) {
      const res = await postPlant(app, `{"id":${id},"name":"a"}`)
      expect(res.statusCode, id).toBe(400)
      expect(res.json()).toEqual(badRequest(ID_RANGE))
    }
  })

  it('accepts integer values written with a fraction or exponent (5.0, 5e0, 1E18) as the same integer', async () => {
    const app = await buildTestApp()
    expect((await postPlant(app, '{"id":5.0,"name":"a"}')).statusCode).toBe(200)
    expect((await postPlant(app, '{"id":5e0,"name":"a"}')).statusCode).toBe(200)
    expect((await postPlant(app, '{"id":5,"name":"b"}')).statusCode).toBe(409)
    expect((await postPlant(app, '{"id":1E18,"name":"a"}')).statusCode).toBe(200)
    expect((await postPlant(app, '{"id":1000000000000000000,"name":"b"}')).statusCode).toBe(409)
  })

  it('reads the id exactly when a name looks like a number (the slow path)', async () => {
    const app = await buildTestApp()
    expect((await postPlant(app, '{"name":"v1.2e3 9007199254740993","id":9007199254740993}')).statusCode).toBe(200)
    expect((await postPlant(app, '{"id":9007199254740992,"name":"v1.2e3 9007199254740993"}')).statusCode).toBe(200)
    expect((await postPlant(app, '{"id":9007199254740993,"name":"other"}')).statusCode).toBe(409)
  })
})

describe('POST /plants: 400 for bad bodies', () => {
  const cases: [string, string, string][] = [
    ['malformed JSON', '{"id":1,"name":}', 'body is not valid JSON'],
    ['truncated JSON', '{"id":1,"name":"fe', 'body is not valid JSON'],
    ['an empty body', '', 'body is not valid JSON'],
    ['an array', '[{"id":1,"name":"fern"}]', 'body must be a JSON object'],
    ['a string', '"fern"', 'body must be a JSON object'],
    ['null', 'null', 'body must be a JSON object'],
    ['a number', '42', 'body must be a JSON object'],
    ['a missing id', '{"name":"fern"}', 'body/id is required'],
    ['a missing name', '{"id":1}', 'body/name is required'],
    ['an id as a string ("5" is not coerced)', '{"id":"5","name":"fern"}', ID_RANGE],
    ['an id of true', '{"id":true,"name":"fern"}', ID_RANGE],
    ['an id in an array', '{"id":[5],"name":"fern"}', ID_RANGE],
    ['a null id', '{"id":null,"name":"fern"}', ID_RANGE],
    ['a name as a number (123 is not coerced)', '{"id":1,"name":123}', 'body/name must be a string'],
    ['a null name', '{"id":1,"name":null}', 'body/name must be a string'],
    ['a null tag', '{"id":1,"name":"fern","tag":null}', 'body/tag must be a string'],
    ['a tag as a number', '{"id":1,"name":"fern","tag":5}', 'body/tag must be a string'],
    ['a name with U+0000', '{"id":1,"name":"a\\u0000b"}', 'body/name must not contain U+0000 or unpaired surrogates'],
    ['a name with a lone high surrogate', '{"id":1,"name":"a\\ud800b"}', 'body/name must not contain U+0000 or unpaired surrogates'],
    ['a tag with a lone low surrogate', '{"id":1,"name":"a","tag":"\\udc00"}', 'body/tag must not contain U+0000 or unpaired surrogates']
  ]
  for (const [what, payload, message] of cases) {
    it(`answers 400 Error for ${what}`, async () => {
      const app = await buildTestApp()
      const res = await postPlant(app, payload)
      expect(res.statusCode).toBe(400)
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
      expect(res.json()).toEqual(badRequest(message))
    })
  }

  it('stores nothing when the body is refused', async () => {
    const app = await buildTestApp()
    await postPlant(app, '{"id":1,"name":"a","tag":null}')
    expect((await postPlant(app, { id: 1, name: 'other' })).statusCode).toBe(200)
  })

  it('accepts a surrogate pair (an emoji written as \\ud83c\\udf3f)', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, '{"id":1,"name":"\\ud83c\\udf3f"}')
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ name: '🌿' })
  })

  it('lets the last of duplicate keys win, as JSON.parse does', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, '{"id":1,"name":"first","name":"last","id":9007199254740993}')
    expect(res.json()).toEqual({ name: 'last' })
    expect((await postPlant(app, '{"id":9007199254740993,"name":"first"}')).statusCode).toBe(409)
    expect((await postPlant(app, '{"id":1,"name":"first"}')).statusCode).toBe(200)
  })
})

describe('POST /plants: authentication', () => {
  it('answers 401 Error with a Bearer challenge when no token is sent', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, { id: 1, name: 'fern' }, { 'content-type': 'application/json' })
    expect(res.statusCode).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="plants"')
    expect(res.json()).toEqual({ error: 401, message: 'missing authorization header' })
  })

  it('answers 401 Error with error="invalid_token" when the token is wrong', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, { id: 1, name: 'fern' }, { authorization: 'Bearer wrong', 'content-type': 'application/json' })
    expect(res.statusCode).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="plants", error="invalid_token"')
    expect(res.json()).toEqual({ error: 401, message: 'invalid authorization header' })
  })

  it('answers 401 for another scheme (Basic) and for a bare "Bearer"', async () => {
    const app = await buildTestApp()
    for (const authorization of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer ', 'test-token-0123456789']) {
      const res = await postPlant(app, { id: 1, name: 'fern' }, { authorization, 'content-type': 'application/json' })
      expect(res.statusCode, authorization).toBe(401)
    }
  })

  it('accepts the scheme word in any case (bearer, BEARER)', async () => {
    const app = await buildTestApp()
    const token = JSON_AUTH.authorization.slice('Bearer '.length)
    expect((await postPlant(app, { id: 1, name: 'a' }, { authorization: `bearer ${token}`, 'content-type': 'application/json' })).statusCode).toBe(200)
    expect((await postPlant(app, { id: 2, name: 'a' }, { authorization: `BEARER ${token}`, 'content-type': 'application/json' })).statusCode).toBe(200)
  })

  it('does not accept a token that only starts like a valid one', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, { id: 1, name: 'a' }, { authorization: `${JSON_AUTH.authorization}x`, 'content-type': 'application/json' })
    expect(res.statusCode).toBe(401)
  })

  it('checks the token before the body: a bad body without a token is a 401, not a 400', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, '{"id":', { 'content-type': 'application/json' })
    expect(res.statusCode).toBe(401)
  })

  it('checks the token before the content type and the size', async () => {
    const app = await buildTestApp({ config: { BODY_LIMIT: 100 } })
    expect((await postPlant(app, 'x', { 'content-type': 'text/plain' })).statusCode).toBe(401)
    expect((await postPlant(app, 'x'.repeat(500), { 'content-type': 'application/json' })).statusCode).toBe(401)
  })
})

describe('POST /plants: other statuses', () => {
  it('answers 415 Error for a content type that is not JSON', async () => {
    const app = await buildTestApp()
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/merge-patch+json']) {
      const res = await postPlant(app, '{"id":1,"name":"a"}', { ...AUTH, 'content-type': type })
      expect(res.statusCode, type).toBe(415)
      expect(res.json()).toEqual({ error: 415, message: 'Unsupported Media Type' })
    }
  })

  it('answers 415 Error for a body without a content type', async () => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: Buffer.from('{"id":1,"name":"a"}') })
    expect(res.statusCode).toBe(415)
    expect(res.json()).toEqual({ error: 415, message: 'Unsupported Media Type' })
  })

  it('answers 413 Error when the body is over BODY_LIMIT', async () => {
    const app = await buildTestApp({ config: { BODY_LIMIT: 100 } })
    const res = await postPlant(app, { id: 1, name: 'x'.repeat(200) })
    expect(res.statusCode).toBe(413)
    expect(res.json()).toEqual({ error: 413, message: 'Request body is too large' })
  })

  it('answers 404 Error for an unknown route, without needing a token', async () => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'GET', url: '/nope?token=secret' })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 404, message: 'no route for GET /nope' })
  })

  it('answers 400 Error for a URL with bad percent-encoding', async () => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'POST', url: '/plants%', headers: JSON_AUTH, payload: '{}' })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toEqual({ error: 400, message: "'/plants%' is not a valid url component" })
  })

  it('answers 507 Error when the memory store is full, and still replays stored plants', async () => {
    const app = await buildTestApp({ maxPlants: 1 })
    expect((await postPlant(app, { id: 1, name: 'a' })).statusCode).toBe(200)
    const res = await postPlant(app, { id: 2, name: 'b' })
    expect(res.statusCode).toBe(507)
    expect(res.json()).toEqual({ error: 507, message: 'the plant store is full' })
    expect((await postPlant(app, { id: 1, name: 'a' })).statusCode).toBe(200)
  })

  it('answers 503 Error with Retry-After when the store is unavailable', async () => {
    const repository: PlantRepository = {
      insert: async () => { throw new StoreUnavailableError() },
      ready: async () => {},
      close: async () => {}
    }
    const app = await buildTestApp({ repository })
    const res = await postPlant(app, { id: 1, name: 'a' })
    expect(res.statusCode).toBe(503)
    expect(res.headers['retry-after']).toBe('1')
    expect(res.json()).toEqual({ error: 503, message: 'the plant store is unavailable, retry later' })
  })

  it('answers 503 Error saying the outcome is unknown when the store lost the write after it was sent', async () => {
    const repository: PlantRepository = {
      insert: async () => { throw new StoreOutcomeUnknownError() },
      ready: async () => {},
      close: async () => {}
    }
    const res = await postPlant(await buildTestApp({ repository }), { id: 1, name: 'a' })
    expect(res.statusCode).toBe(503)
    expect(res.json()).toEqual({
      error: 503,
      message: 'the plant store did not confirm the write: the outcome is unknown; retrying the identical request is safe, it answers 200 if the plant ' +
        'was stored'
    })
  })

  it('answers 500 with a generic message when something unexpected fails, and logs the detail', async () => {
    const lines: string[] = []
    const repository: PlantRepository = {
      insert: async () => { throw new Error('disk controller on fire at /var/secret/path') },
      ready: async () => {},
      close: async () => {}
    }
    const app = await buildTestApp({ repository, logLines: lines })
    const res = await postPlant(app, { id: 1, name: 'a' })
    expect(res.statusCode).toBe(500)
    expect(res.json()).toEqual({ error: 500, message: 'Internal Server Error' })
    expect(lines).toContainEqual(expect.stringContaining('disk controller on fire'))
  })
})

describe('/plants: other methods (405)', () => {
  const notAllowed = (method: string) => ({ error: 405, message: `${method} is not allowed on /plants; allowed: POST` })

  it('answers 405 Error with Allow: POST for GET, PUT, PATCH, DELETE, OPTIONS and TRACE, without a token', async () => {
    const app = await buildTestApp()
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'] as const) {
      const res = await app.inject({ method, url: '/plants' })
      expect(res.statusCode, method).toBe(405)
      expect(res.headers.allow, method).toBe('POST')
      expect(res.headers['content-type'], method).toBe('application/json; charset=utf-8')
      expect(res.headers['www-authenticate'], method).toBeUndefined()
      expect(res.json(), method).toEqual(notAllowed(method))
    }
  })

  it('answers 405 with Allow: POST and no body for HEAD', async () => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'HEAD', url: '/plants' })
    expect(res.statusCode).toBe(405)
    expect(res.headers.allow).toBe('POST')
    expect(res.body).toBe('')
  })

  it('answers 405 before reading the body: a PUT over BODY_LIMIT, with broken JSON or another type is still 405', async () => {
    const app = await buildTestApp({ config: { BODY_LIMIT: 100 } })
    const bodies = [
      { 'content-type': 'application/json', payload: JSON.stringify({ id: 1, name: 'x'.repeat(500) }) },
      { 'content-type': 'application/json', payload: '{"id":' },
      { 'content-type': 'text/plain', payload: 'fern' }
    ]
    for (const { payload, ...headers } of bodies) {
      const res = await app.inject({ method: 'PUT', url: '/plants', headers: { ...AUTH, ...headers }, payload })
      expect(res.statusCode, payload).toBe(405)
      expect(res.json(), payload).toEqual(notAllowed('PUT'))
    }
  })

  it('answers 405 whatever the token: a wrong one is not checked', async () => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'DELETE', url: '/plants', headers: { authorization: 'Bearer wrong' } })
    expect(res.statusCode).toBe(405)
    expect(res.headers['www-authenticate']).toBeUndefined()
    expect(res.json()).toEqual(notAllowed('DELETE'))
  })

  it('answers 405 with a query string too; /plants/ (trailing slash) is another path, 404 for every method', async () => {
    const app = await buildTestApp()
    const query = await app.inject({ method: 'GET', url: '/plants?x=1' })
    expect(query.statusCode).toBe(405)
    expect(query.json()).toEqual(notAllowed('GET'))
    const slash = await app.inject({ method: 'GET', url: '/plants/' })
    expect(slash.statusCode).toBe(404)
    expect(slash.json()).toEqual({ error: 404, message: 'no route for GET /plants/' })
    expect((await postPlant(app, { id: 1, name: 'fern' })).statusCode).toBe(200)
    expect((await app.inject({ method: 'POST', url: '/plants/', headers: JSON_AUTH, payload: '{"id":2,"name":"fern"}' })).statusCode).toBe(404)
  })

  it('carries x-request-id, nosniff and no-store on a 405, like every reply', async () => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'GET', url: '/plants', headers: { 'x-request-id': 'abc-405' } })
    expect(res.statusCode).toBe(405)
    expect(res.headers['x-request-id']).toBe('abc-405')
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(res.headers['cache-control']).toBe('no-store')
  })

  it('names at most the first 200 characters of an unknown path in its 404, never the query', async () => {
    const app = await buildTestApp()
    const long = `/${'p'.repeat(300)}`
    const res = await app.inject({ method: 'GET', url: `${long}?token=secret` })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: 404, message: `no route for GET ${long.slice(0, 200)}` })
  })

  it('answers 404 on other paths for every method, /livez included, before reading the body', async () => {
    const app = await buildTestApp({ config: { BODY_LIMIT: 100 } })
    for (const [method, url] of [['OPTIONS', '/nope'], ['POST', '/livez'], ['PUT', '/readyz']] as const) {
      const res = await app.inject({ method, url, headers: { 'content-type': 'text/plain' }, payload: 'x'.repeat(200) })
      expect(res.statusCode, url).toBe(404)
      expect(res.headers.allow, url).toBeUndefined()
      expect(res.json(), url).toEqual({ error: 404, message: `no route for ${method} ${url}` })
    }
  })
})
