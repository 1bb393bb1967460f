import { describe, expect, it } from 'vitest'
import { buildTestApp } from '../helpers.js'

async function document () {
  const app = await buildTestApp()
  const res = await app.inject({ method: 'GET', url: '/openapi.json' })
  expect(res.statusCode).toBe(200)
  return res.json()
}

describe('GET /openapi.json', () => {
  it('is an OpenAPI 3.1 document titled Plant Store, version 1.0.0, MIT', async () => {
    const doc = await document()
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info).toMatchObject({ title: 'Plant Store', version: '1.0.0', license: { name: 'MIT', identifier: 'MIT' } })
    expect(doc.info.description).toContain('`error` is the HTTP status')
  })

  it('names one server, relative: requests go to the host that served the document', async () => {
    expect((await document()).servers).toEqual([{ url: '/', description: expect.any(String) }])
  })

  it('gives every operation an operationId and a 4XX response (redocly recommended rules)', async () => {
    const { paths } = await document()
    const operations = Object.values(paths as Record<string, Record<string, {
      operationId?: string,
      responses: object
    }>>).flatMap((path) => Object.values(path))
    expect(operations.map((operation) => operation.operationId).sort()).toEqual(['addPlant', 'getLiveness', 'getReadiness'])
    for (const operation of operations) expect(Object.keys(operation.responses), operation.operationId).toContainEqual(expect.stringMatching(/^4/))
    expect(Object.keys(paths['/livez'].get.responses).sort()).toEqual(['200', '4XX'])
    expect(Object.keys(paths['/readyz'].get.responses).sort()).toEqual(['200', '4XX', '503'])
  })

  it('declares the bearer scheme globally and leaves health probes open', async () => {
    const doc = await document()
    expect(doc.components.securitySchemes).toEqual({ bearerAuth: expect.objectContaining({ type: 'http', scheme: 'bearer' }) })
    expect(doc.security).toEqual([{ bearerAuth: [] }])
    expect(doc.paths['/plants'].post.security).toBeUndefined()
    expect(doc.paths['/livez'].get.security).toEqual([])
    expect(doc.paths['/readyz'].get.security).toEqual([])
  })

  it('has the NewPlant, Plant and Error components of the spec', async () => {
    const { schemas } = (await document()).components
    expect(schemas.NewPlant.required).toEqual(['id', 'name'])
    expect(schemas.NewPlant.properties.id).toMatchObject({ type: 'integer', format: 'int64' })
    expect(schemas.NewPlant.properties.name.type).toBe('string')
    expect(schemas.NewPlant.properties.tag.type).toBe('string')
    expect(schemas.Plant.required).toEqual(['name'])
    expect(Object.keys(schemas.Plant.properties)).toEqual(['name', 'tag'])
    expect(schemas.Error.required).toEqual(['error', 'message'])
    expect(schemas.Error.properties.error).toMatchObject({ type: 'integer', format: 'int32' })
    expect(schemas.Error.properties.message.type).toBe('string')
  })

  it('documents every status POST /plants can answer, each error as an Error record', async () => {
    const post = (await document()).paths['/plants'].post
    expect(post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/NewPlant' })
    expect(Object.keys(post.responses).sort()).toEqual(['200', '400', '401', '408', '409', '413', '415', '417', '429', '431', '500', '503', '507'])
    expect(post.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Plant' })
    for (const status of ['400', '401', '409', '413', '415', '417', '429', '500', '503', '507']) {
      expect(post.responses[status].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' })
    }
  })

  it('declares the response headers a client reads by name, on the statuses that carry them', async () => {
    const { paths } = await document()
    const headersOf = (path: string, method: string, status: string) => Object.keys(paths[path][method].responses[status].headers ?? {}).sort()
    expect(headersOf('/plants', 'post', '200')).toEqual(['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'x-request-id'])
    expect(headersOf('/plants', 'post', '401')).toEqual(['www-authenticate', 'x-request-id'])
    expect(headersOf('/plants', 'post', '400')).toEqual(['x-request-id'])
    expect(headersOf('/plants', 'post', '415')).toEqual(['accept-encoding', 'x-request-id'])
    expect(headersOf('/plants', 'post', '429')).toEqual(['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after', 'x-request-id'])
    expect(headersOf('/plants', 'post', '503')).toEqual(['retry-after', 'x-request-id'])
    expect(headersOf('/readyz', 'get', '503')).toEqual(['retry-after', 'x-request-id'])
    for (const status of ['409', '413', '417', '500', '507']) expect(headersOf('/plants', 'post', status), status).toEqual(['x-request-id'])
    // Node's parser refuses these before any hook runs: no request id.
    for (const status of ['408', '431']) expect(headersOf('/plants', 'post', status), status).toEqual([])
    expect(paths['/plants'].post.responses['401'].headers['www-authenticate'])
      .toMatchObject({ schema: { type: 'string' }, description: expect.stringContaining('Bearer realm="plants"') })
    expect(paths['/plants'].post.responses['429'].headers['retry-after'].schema.type).toBe('integer')
  })

  it('is served without a token, and /docs is a page for people', async () => {
    const app = await buildTestApp()
    const page = await app.inject({ method: 'GET', url: '/docs/' })
    expect(page.statusCode).toBe(200)
    expect(page.headers['content-type']).toContain('text/html')
    const script = await app.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' })
    expect(script.statusCode).toBe(200)
  })

  it('/docs shows no online validator badge (it would send the document to validator.swagger.io)', async () => {
    const app = await buildTestApp()
    const initializer = await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' })
    expect(initializer.statusCode).toBe(200)
    // The page's own configuration, applied over the defaults.
    expect(initializer.body).toMatch(/const config = \{[^\n]*"validatorUrl":null/)
    expect(initializer.body).not.toContain('validator.swagger.io')
  })
})
