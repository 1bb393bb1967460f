import { connect, type AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { defaultOverloadLimits } from '../../src/config.js'
import { createMemoryPlantRepository } from '../../src/plants/memory-plant-repository.js'
import type { PlantRepository } from '../../src/plants/plant-repository.js'
import { INT64_MAX, INT64_MIN } from '../../src/schemas.js'
import type { App } from '../../src/app.js'
import { TOKEN, buildTestApp } from '../helpers.js'
import { splitRawReplies } from './hardening-helpers.js'

/**
 * Our own fuzzer at the HTTP edge, on real sockets to a listening app, asserting what an outside
 * API fuzzer (Schemathesis) checks: no 5xx; every reply's status documented for its operation in
 * the served /openapi.json and its body valid by the documented schema; every non-2xx the Error
 * record with `error` equal to the status; nothing stored without a 200 to say so (pipelined
 * requests included); the app alive and serving afterwards. Requests are generated from the
 * document's NewPlant schema and around it (tokens, types, codings, Expect, Host, methods, paths),
 * plus hostile bytes. Bounded: FUZZ_EDGE_RUNS runs each (default 150), and each property stops
 * after FUZZ_EDGE_MS (default 8 s) whatever the count.
 */

const RUNS = Number(process.env.FUZZ_EDGE_RUNS ?? 150)
const TIME_LIMIT_MS = Number(process.env.FUZZ_EDGE_MS ?? 8000)
const BODY_LIMIT = 1024
const BOUNDS = { numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS, markInterruptAsFailure: false }

interface Schema { type?: string, format?: string, pattern?: string, properties?: Record<string, Schema>, required?: string[], $ref?: string }
interface Operation { responses: Record<string, { content?: Record<string, { schema: Schema }> }> }
interface Document { paths: Record<string, Record<string, Operation>>, components: { schemas: Record<string, Schema> } }

/** A repository that counts the plants it really stored. */
function storingRepository (): PlantRepository & { created: number } {
  const inner = createMemoryPlantRepository({ maxPlants: 100000 })
  const repository = {
    created: 0,
    async insert (...args: Parameters<PlantRepository['insert']>) {
      const outcome = await inner.insert(...args)
      if (outcome === 'created') repository.created++
      return outcome
    },
    ready: () => inner.ready(),
    close: () => inner.close()
  }
  return repository
}

/** Writes bytes, half-closes, and collects what comes back until the server closes or `timeoutMs` passes. */
function exchange (port: number, bytes: Buffer, timeoutMs = 3000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    const timer = setTimeout(() => socket.destroy(), timeoutMs)
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(Buffer.concat(chunks).toString('latin1'))
    })
    socket.end(bytes)
  })
}

// ---- generators over the document's NewPlant schema -------------------------------------------

/** Strings a client may send, hostile ones included: NUL, lone surrogates, pairs, controls. */
const text = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('', 'Monstera', 'a\u0000b', '\ud800', 'x\udc00', 'Monstera \ud83c\udf3f', '"', '\\', '\u2028')
)

/** An int64 literal's digits, out of range or not integral now and then. */
const int64 = fc.oneof(
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
  fc.integer({ min: -1000, max: 1000 }).map(BigInt),
  fc.constantFrom(INT64_MAX + 1n, INT64_MIN - 1n, 2n ** 53n + 1n)
).map((value) => value.toString())

/** A value that fits `schema` (the document's own), or now and then does not (wrong type, missing, extra). */
function valueFor (schema: Schema, document: Document): fc.Arbitrary<string> {
  const resolved = schema.$ref === undefined ? schema : document.components.schemas[schema.$ref.split('/').pop() ?? ''] ?? {}
  const wrong = fc.constantFrom('null', 'true', '"5"', '[]', '{}', '1.5', '1e400')
  if (resolved.type === 'integer') return fc.oneof({ weight: 5, arbitrary: int64 }, { weight: 1, arbitrary: wrong })
  if (resolved.type === 'string') return fc.oneof({ weight: 5, arbitrary: text.map((value) => JSON.stringify(value)) }, { weight: 1, arbitrary: wrong })
  if (resolved.type === 'object') {
    const entries = Object.entries(resolved.properties ?? {}).map(([name, property]) => {
      const required = resolved.required?.includes(name) === true
      return fc.option(valueFor(property, document).map((value) => `${JSON.stringify(name)}:${value}`), { freq: required ? 12 : 2 })
    })
    const extra = fc.option(fc.constantFrom('"extra":1', '"__proto__":{"x":1}', '"constructor":{"prototype":{}}'), { freq: 6 })
    return fc.tuple(...entries, extra).map((parts) => `{${parts.filter((part) => part !== null).join(',')}}`)
  }
  return wrong
}

interface Generated { method: string, path: string, head: string[], body: Buffer }

function requestArbitrary (document: Document): fc.Arbitrary<Generated> {
  const body = fc.oneof(
    { weight: 8, arbitrary: valueFor({ $ref: '#/components/schemas/NewPlant' }, document).map((json) => Buffer.from(json)) },
    { weight: 1, arbitrary: fc.constantFrom('{bad', '', '[1]', '"x"', 'x'.repeat(BODY_LIMIT + 10)).map((json) => Buffer.from(json)) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)) }
  )
  return fc.record({
    method: fc.constantFrom('POST', 'POST', 'POST', 'POST', 'GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'QUERY', 'PROPFIND'),
    path: fc.constantFrom('/plants', '/plants', '/plants', '/plants?x=1', '/plants/', '/nope', '/livez', '/readyz', '/plants%zz'),
    auth: fc.constantFrom('good', 'good', 'good', 'wrong', 'none', 'basic', 'twice', 'good-then-wrong'),
    type: fc.constantFrom('application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain', 'none', 'application/json, text/plain'),
    coding: fc.constantFrom('none', 'none', 'none', 'gzip', 'not-gzip', 'x-unknown', 'gzip, gzip'),
    expect: fc.constantFrom('none', 'none', 'none', '100-continue', 'x-fancy'),
    host: fc.boolean(),
    origin: fc.boolean(),
    body
  }).map(({ method, path, auth, type, coding, expect, host, origin, body: raw }) => {
    const head: string[] = []
    if (host) head.push('Host: localhost')
    if (auth === 'good') head.push(`Authorization: Bearer ${TOKEN}`)
    if (auth === 'wrong') head.push('Authorization: Bearer wrong')
    if (auth === 'basic') head.push('Authorization: Basic dXNlcjpwYXNz')
    if (auth === 'twice') head.push(`Authorization: Bearer ${TOKEN}`, `Authorization: Bearer ${TOKEN}`)
    if (auth === 'good-then-wrong') head.push(`Authorization: Bearer ${TOKEN}`, 'Authorization: Bearer wrong')
    if (type !== 'none') head.push(`Content-Type: ${type}`)
    if (expect !== 'none') head.push(`Expect: ${expect}`)
    if (origin) head.push('Origin: https://app.example.com')
    let bytes = raw
    if (coding === 'gzip') bytes = gzipSync(raw)
    if (coding !== 'none') head.push(`Content-Encoding: ${coding === 'not-gzip' ? 'gzip' : coding}`)
    return { method, path, head, body: bytes }
  })
}

const render = ({ method, path, head, body }: Generated, close: boolean): Buffer => Buffer.concat([
  Buffer.from(`${method} ${path} HTTP/1.1\r\n${head.join('\r\n')}${head.length === 0 ? '' : '\r\n'}Content-Length: ${body.length}\r\n${close ? 'Connection: close\r\n' : ''}\r\n`, 'latin1'),
  body
])

/** A valid create to pipeline behind a request: it must be answered, or not stored. */
const pipelined = (id: number): Generated => ({
  method: 'POST',
  path: '/plants',
  head: ['Host: localhost', `Authorization: Bearer ${TOKEN}`, 'Content-Type: application/json'],
  body: Buffer.from(JSON.stringify({ id: 10 ** 12 + id, name: 'pipelined' }))
})

// ---- the oracle: the served document ---------------------------------------------------------

interface Oracle {
  /** The statuses an operation documents (4XX read as 400-499), or undefined for an undocumented one. */
  statuses (method: string, path: string): ((status: number) => boolean) | undefined
  /** The schema a reply body must satisfy. */
  bodySchema (method: string, path: string, status: number): ValidateFunction
  /** Every status the document names anywhere, for bytes whose operation is unknown. */
  any (status: number): boolean
}

function oracle (document: Document): Oracle {
  const ajv = new Ajv2020({ strict: false, validateFormats: false })
  const compiled = new Map<string, ValidateFunction>()
  const compile = (schema: Schema): ValidateFunction => {
    const key = JSON.stringify(schema)
    let validate = compiled.get(key)
    if (validate === undefined) compiled.set(key, validate = ajv.compile({ ...schema, components: document.components }))
    return validate
  }
  const errorSchema = compile({ $ref: '#/components/schemas/Error' })
  const operation = (method: string, path: string): Operation | undefined => document.paths[path.split('?')[0] ?? '']?.[method.toLowerCase()]
  const responseFor = (op: Operation, status: number) => op.responses[String(status)] ?? op.responses[`${String(status)[0]}XX`]
  const everything = new Set(Object.values(document.paths).flatMap((ops) => Object.values(ops)).flatMap((op) => Object.keys(op.responses)))
  return {
    statuses (method, path) {
      const op = operation(method, path)
      return op === undefined ? undefined : (status) => responseFor(op, status) !== undefined
    },
    bodySchema (method, path, status) {
      const op = operation(method, path)
      const schema = op === undefined ? undefined : responseFor(op, status)?.content?.['application/json']?.schema
      return schema === undefined ? errorSchema : compile(schema)
    },
    any: (status) => everything.has(String(status)) || everything.has(`${String(status)[0]}XX`) || status === 404
  }
}

/** What a request that reaches no documented operation may get: no route, no method, or an edge refusal. */
const UNDOCUMENTED = new Set([400, 404, 405, 408, 413, 415, 417, 431])

describe('fuzzing the HTTP edge on real sockets (fast-check, bounded)', () => {
  async function setUp () {
    const repository = storingRepository()
    const app = await buildTestApp({
      repository,
      bodyLimit: BODY_LIMIT,
      // Shedding is a documented 503, but no 5xx is what is asserted: pressure is off here.
      config: { overload: { ...defaultOverloadLimits(), maxEventLoopDelayMs: 0, maxHeapUsedBytes: 0 }, corsOrigins: ['https://app.example.com'] }
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as Document
    return { app, repository, port: (app.server.address() as AddressInfo).port, oracle: oracle(document), document }
  }

  /** The app still listens and answers its liveness probe on a fresh connection. */
  async function expectAlive (app: App, port: number): Promise<void> {
    expect(app.server.listening).toBe(true)
    expect((await exchange(port, Buffer.from('GET /livez HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'))).startsWith('HTTP/1.1 200 ')).toBe(true)
  }

  /** Checks every reply of one exchange; returns how many were 200s to POST /plants. */
  function checkReplies (text: string, requests: Generated[] | undefined, check: Oracle): number {
    const { replies } = splitRawReplies(text)
    const finals = replies.filter((reply) => reply.status >= 200)
    let created = 0
    finals.forEach((reply, index) => {
      const request = requests?.[index]
      const where = request === undefined ? 'hostile bytes' : `${request.method} ${request.path} [${request.head.join(' | ')}]`
      expect(reply.status, where).toBeLessThan(500)
      if (request === undefined) expect(check.any(reply.status), `${where}: ${reply.status} documented somewhere`).toBe(true)
      else {
        const documented = check.statuses(request.method, request.path)
        if (documented === undefined) expect(UNDOCUMENTED.has(reply.status), `${where}: ${reply.status}`).toBe(true)
        else expect(documented(reply.status), `${where}: ${reply.status} is documented for the operation`).toBe(true)
      }
      if (reply.status >= 300 || (reply.status >= 200 && reply.body !== '')) {
        expect(reply.headers['content-type'], where).toBe('application/json; charset=utf-8')
        const body = JSON.parse(reply.body) as unknown
        // Hostile bytes are a POST /plants, cut, corrupted or replaced.
        const validate = check.bodySchema(request?.method ?? 'POST', request?.path ?? '/plants', reply.status)
        expect(validate(body), `${where}: ${reply.status} ${reply.body} matches the documented schema: ${JSON.stringify(validate.errors)}`).toBe(true)
        if (reply.status >= 300) expect((body as { error: unknown }).error, where).toBe(reply.status)
      }
      if (reply.status === 200 && (request === undefined || (request.method === 'POST' && request.path.startsWith('/plants')))) created++
    })
    return created
  }

  it('answers generated requests (one, or one with a create pipelined behind it) within the document, and stores nothing unanswered', { timeout: 60000 }, async () => {
    const { app, repository, port, oracle: check, document } = await setUp()
    let sequence = 0
    await fc.assert(fc.asyncProperty(requestArbitrary(document), fc.boolean(), async (request, pipeline) => {
      const requests = pipeline ? [request, pipelined(++sequence)] : [request]
      const bytes = Buffer.concat(requests.map((one, index) => render(one, index === requests.length - 1)))
      const before = repository.created
      const answered200 = checkReplies(await exchange(port, bytes), requests, check)
      // A plant stored is a plant some 200 said was stored (an identical replay is a 200 that stores nothing).
      expect(repository.created - before).toBeLessThanOrEqual(answered200)
    }), BOUNDS)
    await expectAlive(app, port)
  })

  it('answers hostile bytes (random, or a valid create cut or corrupted) with documented Error records only, storing nothing unanswered', { timeout: 60000 }, async () => {
    const { app, repository, port, oracle: check } = await setUp()
    const valid = render(pipelined(0), true)
    const hostile = fc.oneof(
      fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
      fc.nat({ max: valid.length }).map((end) => valid.subarray(0, end)),
      fc.tuple(fc.nat({ max: valid.length - 1 }), fc.integer({ min: 0, max: 255 })).map(([at, byte]) => {
        const copy = Buffer.from(valid)
        copy[at] = byte
        return copy
      }),
      fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.concat([valid.subarray(0, valid.indexOf('\r\n\r\n') + 4), Buffer.from(bytes)]))
    )
    await fc.assert(fc.asyncProperty(hostile, async (bytes) => {
      const before = repository.created
      const answered = checkReplies(await exchange(port, bytes), undefined, check)
      // These bytes hold one create at most: stored only with its 200.
      expect(repository.created - before).toBeLessThanOrEqual(answered)
    }), BOUNDS)
    await expectAlive(app, port)
  })
})
