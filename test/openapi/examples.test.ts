import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { StoreUnavailableError } from '../../src/errors.js'
import type { PlantRepository } from '../../src/plants/plant-repository.js'
import type { ErrorRecord } from '../../src/schemas.js'
import { parseRawReply, rawExchange } from '../hardening/hardening-helpers.js'
import { AUTH, buildTestApp, postPlant, TOKEN } from '../helpers.js'

interface Example { value: unknown }
interface Media { schema: unknown, example?: unknown, examples?: Record<string, Example> }
interface Operation { requestBody?: { content: Record<string, Media> }, responses: Record<string, { content?: Record<string, Media> }> }

async function servedDocument () {
  const app = await buildTestApp()
  const reply = await app.inject({ method: 'GET', url: '/openapi.json' })
  return reply.json() as { paths: Record<string, Record<string, Operation>>, components: { schemas: Record<string, { examples?: unknown[] }> } }
}

const failing = (insert: PlantRepository['insert'], ready: PlantRepository['ready'] = async () => {}): PlantRepository =>
  ({ insert, ready, close: async () => {} })

/** The Error record a listening app answers to raw bytes (what a client library would not send). */
async function rawReply (request: string, config: Parameters<typeof buildTestApp>[0] = {}): Promise<ErrorRecord> {
  const app = await buildTestApp(config)
  await app.listen({ port: 0, host: '127.0.0.1' })
  return JSON.parse(parseRawReply(await rawExchange((app.server.address() as AddressInfo).port, request)).body) as ErrorRecord
}

/** For each error response shown (path and status): provoke it and return the Error record the service answered. */
const provoke: Record<string, () => Promise<ErrorRecord>> = {
  '/plants 400': async () => (await postPlant(await buildTestApp(), '{"id":"10","name":"Monstera"}')).json(),
  '/plants 401': async () => (await postPlant(await buildTestApp(), { id: 10, name: 'Monstera' }, { 'content-type': 'application/json' })).json(),
  '/plants 409': async () => {
    const app = await buildTestApp()
    expect((await postPlant(app, { id: 10, name: 'Monstera', tag: 'tropical' })).statusCode).toBe(200)
    return (await postPlant(app, { id: 10, name: 'Fern' })).json()
  },
  '/plants 413': async () => (await postPlant(await buildTestApp(), { id: 10, name: 'M'.repeat(16384) })).json(),
  '/plants 415': async () => (await postPlant(await buildTestApp(), 'Monstera', { ...AUTH, 'content-type': 'text/plain' })).json(),
  '/plants 417': async () => rawReply(`POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nExpect: x-fancy\r\nContent-Type: ` +
    'application/json\r\nContent-Length: 27\r\nConnection: close\r\n\r\n{"id":10,"name":"Monstera"}'),
  '/plants 429': async () => {
    const app = await buildTestApp({ config: { RATE_LIMIT_PER_MINUTE: 600 } })
    for (let i = 0; i < 600; i++) await postPlant(app, { id: 10, name: 'Monstera' })
    const reply = (await postPlant(app, { id: 10, name: 'Monstera' })).json() as ErrorRecord
    // The seconds left in the window are whatever they are when the limit is hit.
    return { ...reply, message: reply.message.replace(/retry in \d+ s$/, 'retry in 42 s') }
  },
  '/plants 500': async () => (await postPlant(await buildTestApp({ repository: failing(async () => { throw new Error('disk on fire') }) }), {
    id: 10,
    name: 'Monstera'
  })).json(),
  '/plants 503': async () => (await postPlant(await buildTestApp({ repository: failing(async () => { throw new StoreUnavailableError() }) }), {
    id: 10,
    name: 'Monstera'
  })).json(),
  '/livez 4XX': async () => rawReply('GET /livez HTTP/1.1\r\nConnection: close\r\n\r\n'),
  '/readyz 4XX': async () => rawReply('GET /readyz HTTP/1.1\r\nConnection: close\r\n\r\n'),
  '/readyz 503': async () => (await (await buildTestApp({
    repository: failing(async () => 'created', async () => {
      throw new Error('store down')
    })
  })).inject({ method: 'GET', url: '/readyz' })).json(),
  // Headers that never end, cut off at HEADERS_TIMEOUT_MS.
  '/plants 408': async () => rawReply(`POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\n`,
    { config: { HEADERS_TIMEOUT_MS: 200, REQUEST_TIMEOUT_MS: 400 } }),
  '/plants 431': async () => rawReply(`POST /plants HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`),
  '/plants 507': async () => {
    const app = await buildTestApp({ maxPlants: 1 })
    await postPlant(app, { id: 9, name: 'Fern' })
    return (await postPlant(app, { id: 10, name: 'Monstera' })).json()
  }
}

describe('the examples in /openapi.json', () => {
  it('offer a realistic plant to send and show the plant it answers, from the TypeBox schemas', async () => {
    const { components, paths } = await servedDocument()
    expect(components.schemas.NewPlant?.examples).toEqual([{ id: 10, name: 'Monstera', tag: 'tropical' }])
    expect(components.schemas.Plant?.examples).toEqual([{ name: 'Monstera', tag: 'tropical' }])
    // The request body refers to NewPlant and adds no example of its own: the schema's is the one offered.
    expect(paths['/plants']?.post?.requestBody?.content['application/json']).toEqual({ schema: { $ref: '#/components/schemas/NewPlant' } })
  })

  it('the NewPlant example is stored, and the answer is the Plant example', async () => {
    const { components } = await servedDocument()
    const res = await postPlant(await buildTestApp(), components.schemas.NewPlant?.examples?.[0] as object)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual(components.schemas.Plant?.examples?.[0])
  })

  it('every error response shows Error record examples whose `error` is that status', async () => {
    const { paths } = await servedDocument()
    const responses = Object.values(paths).flatMap((operations) => Object.values(operations)).flatMap((operation) => Object.entries(operation.responses))
    const errorResponses = responses.filter(([status]) => !status.startsWith('2'))
    expect(errorResponses.length).toBeGreaterThan(10)
    for (const [status, response] of errorResponses) {
      const examples = Object.values(response.content?.['application/json']?.examples ?? {})
      expect(examples.length, `response ${status}`).toBeGreaterThan(0)
      for (const { value } of examples) {
        const error = String((value as ErrorRecord).error)
        expect(status.endsWith('XX') ? error[0] + 'XX' : error, `response ${status}`).toBe(status)
      }
    }
  })

  it('every Error example is the reply the service really gives', async () => {
    const { paths } = await servedDocument()
    const shown = new Map(Object.entries(paths).flatMap(([path, operations]) => Object.values(operations)
      .flatMap((operation) => Object.entries(operation.responses))
      .flatMap(([status, response]) => Object.values(response.content?.['application/json']?.examples ?? {})
        .map(({ value }): [string, unknown] => [`${path} ${status}`, value]))))
    // Every example the document shows is checked here, and every one checked is shown.
    expect([...shown.keys()].sort()).toEqual(Object.keys(provoke).sort())
    for (const [shownAt, run] of Object.entries(provoke)) expect(await run(), shownAt).toEqual(shown.get(shownAt))
  })
})
