import type { AddressInfo, Socket } from 'node:net'
import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { defaultOverloadLimits } from '../../src/config.js'
import { clientErrorHandler, StoreOutcomeUnknownError, StoreUnavailableError, WritesFailingError } from '../../src/errors.js'
import type { PlantRepository } from '../../src/plants/plant-repository.js'
import { errorExamples, type ErrorExampleName, type ErrorRecord } from '../../src/schemas.js'
import { parseRawReply, rawExchange, until } from '../hardening/hardening-helpers.js'
import { AUTH, buildTestApp, JSON_AUTH, postPlant, TOKEN } from '../helpers.js'

interface Example { summary: string, value: unknown }
interface Media { schema: unknown, example?: unknown, examples?: Record<string, Example> }
interface Operation { requestBody?: { content: Record<string, Media> }, responses: Record<string, { content?: Record<string, Media> }> }

async function servedDocument () {
  const app = await buildTestApp()
  const reply = await app.inject({ method: 'GET', url: '/openapi.json' })
  return reply.json() as { paths: Record<string, Record<string, Operation>>, components: { schemas: Record<string, { examples?: unknown[] }> } }
}

const failing = (insert: PlantRepository['insert'], ready: PlantRepository['ready'] = async () => {}): PlantRepository =>
  ({ insert, ready, close: async () => {} })

/** The reply Node's client-error handler writes on the socket, as an Error record. */
function clientErrorReply (code: string): ErrorRecord {
  let written = ''
  const socket = { writable: true, end: (text: string) => { written = text }, destroy: () => {} } as unknown as Socket
  clientErrorHandler(Object.assign(new Error(code), { code }), socket)
  return JSON.parse(written.slice(written.indexOf('\r\n\r\n') + 4)) as ErrorRecord
}

/** The Error record a listening app answers to raw bytes (what a client library would not send). */
async function rawReply (request: string): Promise<ErrorRecord> {
  const app = await buildTestApp()
  await app.listen({ port: 0, host: '127.0.0.1' })
  return JSON.parse(parseRawReply(await rawExchange((app.server.address() as AddressInfo).port, request)).body) as ErrorRecord
}

/** For each named example: provoke it and return the Error record the service answered. */
const provoke: Record<ErrorExampleName, () => Promise<ErrorRecord>> = {
  invalidId: async () => (await postPlant(await buildTestApp(), '{"id":"10","name":"Monstera"}')).json(),
  invalidGzip: async () => (await buildTestApp()).inject({ method: 'POST', url: '/plants', headers: { ...JSON_AUTH, 'content-encoding': 'gzip' }, payload: '{"id":10,"name":"Monstera"}' }).then((reply) => reply.json()),
  missingToken: async () => (await postPlant(await buildTestApp(), { id: 10, name: 'Monstera' }, { 'content-type': 'application/json' })).json(),
  invalidToken: async () => (await postPlant(await buildTestApp(), { id: 10, name: 'Monstera' }, { ...JSON_AUTH, authorization: 'Bearer wrong' })).json(),
  conflict: async () => {
    const app = await buildTestApp()
    expect((await postPlant(app, { id: 10, name: 'Monstera', tag: 'tropical' })).statusCode).toBe(200)
    return (await postPlant(app, { id: 10, name: 'Fern' })).json()
  },
  tooLarge: async () => (await postPlant(await buildTestApp(), { id: 10, name: 'M'.repeat(16384) })).json(),
  tooLargeDecoded: async () => (await buildTestApp()).inject({
    method: 'POST',
    url: '/plants',
    headers: { ...JSON_AUTH, 'content-encoding': 'gzip' },
    payload: gzipSync(JSON.stringify({ id: 10, name: 'M'.repeat(16384) }))
  }).then((reply) => reply.json()),
  unsupportedEncoding: async () => (await buildTestApp()).inject({ method: 'POST', url: '/plants', headers: { ...JSON_AUTH, 'content-encoding': 'x-unknown' }, payload: '{"id":10,"name":"Monstera"}' }).then((reply) => reply.json()),
  notJson: async () => (await postPlant(await buildTestApp(), 'Monstera', { ...AUTH, 'content-type': 'text/plain' })).json(),
  rateLimited: async () => {
    const app = await buildTestApp({ config: { rateLimit: { perMinute: 600 } } })
    for (let i = 0; i < 600; i++) await postPlant(app, { id: 10, name: 'Monstera' })
    const reply = (await postPlant(app, { id: 10, name: 'Monstera' })).json() as ErrorRecord
    // The seconds left in the window are whatever they are when the limit is hit.
    return { ...reply, message: reply.message.replace(/retry in \d+ s$/, 'retry in 42 s') }
  },
  unexpected: async () => (await postPlant(await buildTestApp({ repository: failing(async () => { throw new Error('disk on fire') }) }), { id: 10, name: 'Monstera' })).json(),
  overloaded: async () => {
    // A heap limit of 1 byte is always exceeded: pressure from the first sample on.
    const app = await buildTestApp({ config: { overload: { ...defaultOverloadLimits(), maxHeapUsedBytes: 1, sampleIntervalMs: 10 } } })
    await app.ready()
    await until(() => app.isUnderPressure(), 5000, 'pressure seen')
    return (await postPlant(app, { id: 10, name: 'Monstera' })).json()
  },
  storeUnavailable: async () => (await postPlant(await buildTestApp({ repository: failing(async () => { throw new StoreUnavailableError() }) }), { id: 10, name: 'Monstera' })).json(),
  storeOutcomeUnknown: async () => (await postPlant(await buildTestApp({ repository: failing(async () => { throw new StoreOutcomeUnknownError() }) }), { id: 10, name: 'Monstera' })).json(),
  writesFailing: async () => {
    const app = await buildTestApp({ repository: failing(async () => 'created', async () => { throw new WritesFailingError('5210') }) })
    return (await app.inject({ method: 'GET', url: '/readyz' })).json()
  },
  notReady: async () => {
    const app = await buildTestApp({ repository: failing(async () => 'created', async () => { throw new Error('connect ECONNREFUSED') }) })
    return (await app.inject({ method: 'GET', url: '/readyz' })).json()
  },
  storeFull: async () => {
    const app = await buildTestApp({ maxPlants: 1 })
    await postPlant(app, { id: 9, name: 'Fern' })
    return (await postPlant(app, { id: 10, name: 'Monstera' })).json()
  },
  notHttp: async () => clientErrorReply('HPE_INVALID_METHOD'),
  tooSlow: async () => clientErrorReply('ERR_HTTP_REQUEST_TIMEOUT'),
  headersTooLarge: async () => clientErrorReply('HPE_HEADER_OVERFLOW'),
  missingHost: async () => rawReply('POST /plants HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 27\r\nConnection: close\r\n\r\n{"id":10,"name":"Monstera"}'),
  duplicateHost: async () => rawReply('GET /livez HTTP/1.1\r\nHost: localhost\r\nHost: example.com\r\nConnection: close\r\n\r\n'),
  invalidHost: async () => rawReply('GET /livez HTTP/1.1\r\nHost: a b@c\r\nConnection: close\r\n\r\n'),
  versionNotSupported: async () => rawReply('GET /livez HTTP/2.0\r\nHost: localhost\r\n\r\n'),
  duplicateAuthorization: async () => rawReply(`POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 27\r\nConnection: close\r\n\r\n{"id":10,"name":"Monstera"}`),
  methodNotAllowed: async () => (await (await buildTestApp()).inject({ method: 'GET', url: '/plants' })).json(),
  expectationFailed: async () => rawReply(`POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nExpect: x-fancy\r\nContent-Type: application/json\r\nContent-Length: 27\r\nConnection: close\r\n\r\n{"id":10,"name":"Monstera"}`)
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
    const shown = new Set(Object.values(paths).flatMap((operations) => Object.values(operations))
      .flatMap((operation) => Object.values(operation.responses))
      .flatMap((response) => Object.keys(response.content?.['application/json']?.examples ?? {})))
    // Every example the document shows is checked here, and every one checked is shown.
    expect([...shown].sort()).toEqual(Object.keys(provoke).sort())
    for (const [name, run] of Object.entries(provoke)) {
      expect(await run(), name).toEqual(errorExamples[name as ErrorExampleName].value)
    }
  })
})
