import { connect, type AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { gzipSync } from 'node:zlib'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createMemoryPlantRepository } from '../../src/plants/memory-plant-repository.js'
import type { PlantRepository } from '../../src/plants/plant-repository.js'
import { INT64_MAX, INT64_MIN } from '../../src/schemas.js'
import type { App } from '../../src/app.js'
import { TOKEN, buildTestApp } from '../helpers.js'
import { splitReplies, type Answer } from './hardening-helpers.js'

/**
 * Our own fuzzer at the HTTP edge, on real sockets to a listening app. Its oracle:
 * - exactly one final reply per request, in order, unless a reply closed the connection (then none
 *   after it) or the request was a CONNECT (Node closes the connection without a reply); the server
 *   closes the connection after the last request, which asks it to. The client never half-closes
 *   (Node aborts a request whose client half-closes: see half-close.test.ts);
 * - no 5xx; every status documented for its operation in the served /openapi.json or named in the
 *   document's description; every body valid by its documented schema, every non-2xx an Error record
 *   whose `error` is the status;
 * - the edge as docs/api.md states it: Node's parser refuses an authority-form target with a 400, a
 *   bad URL is a 400, a missing Host in HTTP/1.1 a 400, and two Hosts, a malformed one, or a request
 *   line in another HTTP version are served; only /plants answers 405, with `Allow` naming the
 *   methods the document lists for it, and every other unlisted path or method 404; an Expect other
 *   than 100-continue is a 417, before the token, after the 100 Continue Node writes in HTTP/1.1 for
 *   any Expect that mentions 100-continue; the first Authorization is the one used; with
 *   CORS_ORIGINS, OPTIONS is the preflight's 204; a request the document calls valid is stored (200,
 *   or 409 for another plant under its id);
 * - nothing stored without a 200 to say so, with a store that answers in the same turn and with one
 *   that answers 2 ms later: a create left unanswered behind a reply that closed the connection was
 *   either not stored or stored as sent, so its identical replay on a new connection answers 200;
 * - the app alive and serving afterwards.
 * Bounded by runs, not time: FUZZ_EDGE_RUNS runs per property (default 150, at least MIN_RUNS), and
 * the test fails unless every run completed.
 */

const MIN_RUNS = 100
const RUNS = Math.max(MIN_RUNS, Number(process.env.FUZZ_EDGE_RUNS ?? 150))
/** How long a client waits for the server to answer everything and close: well past REQUEST_TIMEOUT below. */
const WAIT_MS = 3000
const BODY_LIMIT = 1024
/** Short request timeouts, so that a cut request is answered 408 within the wait, and soon: runs wait on them. */
const HTTP_LIMITS = { HEADERS_TIMEOUT_MS: 250, REQUEST_TIMEOUT_MS: 500, CONNECTION_TIMEOUT_MS: 2000, KEEP_ALIVE_TIMEOUT_MS: 150 }
const ORIGIN = 'https://app.example.com'

interface Schema { type?: string, format?: string, pattern?: string, properties?: Record<string, Schema>, required?: string[], $ref?: string }
interface Operation { responses: Record<string, { content?: Record<string, { schema: Schema }> }> }
interface Document {
  info: { description: string }
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, Schema> }
}

/** A repository that counts the plants it really stored, answering `delayMs` later (0: in the same turn). */
function storingRepository (delayMs: number): PlantRepository & { created: number, pending: number } {
  const inner = createMemoryPlantRepository({ maxPlants: 100000 })
  const repository = {
    created: 0,
    pending: 0,
    async insert (...args: Parameters<PlantRepository['insert']>) {
      repository.pending++
      try {
        if (delayMs > 0) await sleep(delayMs)
        const outcome = await inner.insert(...args)
        if (outcome === 'created') repository.created++
        return outcome
      } finally {
        repository.pending--
      }
    },
    ready: () => inner.ready(),
    close: () => inner.close()
  }
  return repository
}

/**
 * Writes bytes (never half-closing) and collects what comes back until the server closes the
 * connection or `WAIT_MS` passes; `closed` says which.
 */
function exchange (port: number, bytes: Buffer): Promise<{ text: string, closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    let closed = false
    const timer = setTimeout(() => socket.destroy(), WAIT_MS)
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('end', () => { closed = true })
    socket.on('error', () => { closed = true })
    socket.on('close', () => {
      clearTimeout(timer)
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closed })
    })
    socket.write(bytes)
  })
}

type Reply = Answer['reply']

const closes = (reply: Reply): boolean => /(?:^|,)\s*close\s*(?:,|$)/i.test(reply.headers.connection ?? '')

// ---- generators over the document's NewPlant schema -------------------------------------------

/** A JSON text, and whether the document (schema and descriptions) says it is valid. */
interface Json { text: string, valid: boolean }

/** Strings a client may send, hostile ones included: NUL, lone surrogates, pairs, controls. */
const text = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('', 'Monstera', 'a\u0000b', '\ud800', 'x\udc00', 'Monstera \ud83c\udf3f', '"', '\\', '\u2028')
).map((value): Json => ({ text: JSON.stringify(value), valid: value.isWellFormed() && !value.includes('\u0000') }))

/** An int64 literal's digits, out of range now and then. */
const int64 = fc.oneof(
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
  fc.integer({ min: -1000, max: 1000 }).map(BigInt),
  fc.constantFrom(INT64_MAX + 1n, INT64_MIN - 1n, 2n ** 53n + 1n)
).map((value): Json => ({ text: value.toString(), valid: value >= INT64_MIN && value <= INT64_MAX }))

/** A value that fits `schema` (the document's own), or now and then does not (wrong type, missing, extra). */
function valueFor (schema: Schema, document: Document): fc.Arbitrary<Json> {
  const resolved = schema.$ref === undefined ? schema : document.components.schemas[schema.$ref.split('/').pop() ?? ''] ?? {}
  // Values of another JSON type than the schema's (1e400 is no int64 either).
  const others = ['null', 'true', '[]', '{}', ...(resolved.type === 'string' ? ['5'] : ['"5"', '1.5', '1e400'])]
  const wrong = fc.constantFrom(...others).map((json): Json => ({ text: json, valid: false }))
  if (resolved.type === 'integer') return fc.oneof({ weight: 5, arbitrary: int64 }, { weight: 1, arbitrary: wrong })
  if (resolved.type === 'string') return fc.oneof({ weight: 5, arbitrary: text }, { weight: 1, arbitrary: wrong })
  if (resolved.type === 'object') {
    const names = Object.keys(resolved.properties ?? {})
    const entries = names.map((name) => fc.option(valueFor(resolved.properties?.[name] ?? {}, document),
      { freq: resolved.required?.includes(name) === true ? 12 : 2 }))
    // Extra properties: the document says they are accepted and ignored, prototype-poisoning keys included.
    const extra = fc.option(fc.constantFrom('"extra":1', '"__proto__":{"x":1}', '"constructor":{"prototype":{}}', '"nested":{"__proto__":null}'), { freq: 4 })
    return fc.tuple(fc.tuple(...entries), extra).map(([values, more]): Json => {
      const parts = values.flatMap((value, i) => value === null ? [] : [`${JSON.stringify(names[i])}:${value.text}`])
      const valid = values.every((value, i) => value === null ? resolved.required?.includes(names[i] as string) !== true : value.valid)
      return { text: `{${[...parts, ...(more === null ? [] : [more])].join(',')}}`, valid }
    })
  }
  return wrong
}

interface Generated {
  method: string
  /** The request target: a path, or an authority. */
  path: string
  version: string
  head: string[]
  body: Buffer
  /** What the model needs to know beyond the bytes. */
  host: 'ok' | 'none' | 'empty' | 'twice' | 'invalid'
  /** The first Authorization header carries the valid token (Node keeps the first of two). */
  token: boolean
  expect: string
  /** The document says this POST /plants must be stored (200, or 409 for another plant under its id). */
  valid: boolean
}

/** The parts of a request the generator varies. */
interface Parts { method: string, path: string, version: string, auth: string, type: string, coding: string, expect: string, host: Generated['host'] }

function requestArbitrary (document: Document): fc.Arbitrary<Generated> {
  const utf8 = ({ text: json, valid }: Json) => ({ bytes: Buffer.from(json), valid })
  const plant = valueFor({ $ref: '#/components/schemas/NewPlant' }, document)
  // About half of the bodies valid: most generated NewPlants have some field wrong.
  const body = fc.oneof(
    { weight: 4, arbitrary: plant.filter((json) => json.valid).map(utf8) },
    { weight: 4, arbitrary: plant.map(utf8) },
    { weight: 1, arbitrary: fc.constantFrom('{bad', '', '[1]', '"x"', 'x'.repeat(BODY_LIMIT + 10)).map((json) => utf8({ text: json, valid: false })) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ bytes: Buffer.from(bytes), valid: false })) }
  )
  // A valid create with at most three of its parts changed: every combination the edge treats apart
  // (a valid token with an unmet Expect, a good request in HTTP/2.0, ...) comes up many times in a run.
  const usual: Parts = { method: 'POST', path: '/plants', version: '1.1', auth: 'good', type: 'application/json', coding: 'none', expect: 'none', host: 'ok' }
  const changes: fc.Arbitrary<Parts> = fc.record({
    method: fc.constantFrom('GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'QUERY', 'PROPFIND', 'CONNECT'),
    path: fc.constantFrom('/plants?x=1', '/plants/', '/PLANTS', '/nope', '/livez', '/readyz', '/plants%zz', 'x:80'),
    version: fc.constantFrom('1.0', '2.0', '0.9'),
    auth: fc.constantFrom('wrong', 'none', 'basic', 'twice', 'good-then-wrong', 'wrong-then-good'),
    type: fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'none', 'application/json, text/plain'),
    coding: fc.constantFrom('gzip', 'not-gzip', 'x-unknown', 'gzip, gzip'),
    expect: fc.constantFrom('100-continue', '100-Continue', 'x-fancy', '100-continue, foo', 'foo, 100-continue'),
    host: fc.constantFrom('none', 'empty', 'twice', 'invalid')
  })
  const names = Object.keys(usual) as (keyof Parts)[]
  return fc.record({ changed: fc.subarray(names, { maxLength: 3 }), changes, origin: fc.boolean(), body }).map(({
    changed, changes: other, origin,
    body: json
  }): Generated => {
    const chosen = { ...usual }
    for (const name of changed) Object.assign(chosen, { [name]: other[name] })
    const { method, path, version, auth, type, coding, expect, host } = chosen
    const head: string[] = []
    if (host === 'ok') head.push('Host: localhost')
    if (host === 'empty') head.push('Host: ')
    if (host === 'twice') head.push('Host: localhost', 'Host: example.com')
    if (host === 'invalid') head.push('Host: a b@c')
    const good = `Authorization: Bearer ${TOKEN}`
    const wrong = 'Authorization: Bearer wrong'
    if (auth === 'good') head.push(good)
    if (auth === 'wrong') head.push(wrong)
    if (auth === 'basic') head.push('Authorization: Basic dXNlcjpwYXNz')
    if (auth === 'twice') head.push(good, good)
    if (auth === 'good-then-wrong') head.push(good, wrong)
    if (auth === 'wrong-then-good') head.push(wrong, good)
    if (type !== 'none') head.push(`Content-Type: ${type}`)
    if (expect !== 'none') head.push(`Expect: ${expect}`)
    if (origin) head.push(`Origin: ${ORIGIN}`)
    const raw = json.bytes
    let bytes = raw
    if (coding === 'gzip') bytes = gzipSync(raw)
    if (coding !== 'none') head.push(`Content-Encoding: ${coding === 'not-gzip' ? 'gzip' : coding}`)
    const token = auth === 'good' || auth === 'twice' || auth === 'good-then-wrong'
    const valid = json.valid && method === 'POST' && (path === '/plants' || path === '/plants?x=1') && (host !== 'none' || version !== '1.1') && token &&
      (type === 'application/json' || type === 'application/json; charset=utf-8') && (coding === 'none' || coding === 'gzip') && (expect === 'none' ||
        expect.toLowerCase() === '100-continue')
    return { method, path, version, head, body: bytes, host, token, expect, valid }
  })
}

const render = ({ method, path, version, head, body }: Generated, close: boolean): Buffer => Buffer.concat([
  Buffer.from(`${method} ${path} HTTP/${version}\r\n${head.join('\r\n')}${head.length === 0 ? '' : '\r\n'}Content-Length: ` +
    `${body.length}\r\n${close ? 'Connection: close\r\n' : ''}\r\n`, 'latin1'),
  body
])

const describeRequest = (request: Generated) => `${request.method} ${request.path} HTTP/${request.version} [${request.head.join(' | ')}]`

/** A valid create to pipeline behind a request: it must be answered, or its identical replay answers 200. */
const pipelined = (id: number): Generated => ({
  method: 'POST',
  path: '/plants',
  version: '1.1',
  head: ['Host: localhost', `Authorization: Bearer ${TOKEN}`, 'Content-Type: application/json'],
  body: Buffer.from(JSON.stringify({ id: 10 ** 12 + id, name: 'pipelined' })),
  host: 'ok',
  token: true,
  expect: 'none',
  valid: true
})

// ---- the oracle: the served document, and the edge as docs/api.md states it ---------------------

const pathOf = (target: string) => target.split('?')[0] ?? ''

interface Oracle {
  /** Whether the document lists an operation for this method and path (a HEAD is its GET's). */
  listed (method: string, path: string): boolean
  /** Whether the status is documented for the operation, or named in the document's description. */
  documented (method: string, path: string, status: number): boolean
  /** Whether the status is documented for any operation, or named in the document's description. */
  documentedAnywhere (status: number): boolean
  /** The schema a reply body must satisfy: the documented one, else the Error record. */
  bodySchema (method: string, path: string, status: number): ValidateFunction
  /** The methods the document lists for a path. */
  methods (path: string): Set<string>
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
  // A HEAD is its GET without the body (RFC 9110 §9.3.2): documented by the GET operation.
  const operation = (method: string, path: string): Operation | undefined => document.paths[pathOf(path)]?.[method === 'HEAD' ? 'get' : method.toLowerCase()]
  const responseFor = (op: Operation | undefined, status: number) => op?.responses[String(status)] ?? op?.responses[`${String(status)[0]}XX`]
  // The statuses of replies outside the listed operations (404, 405, malformed HTTP), as the description names them.
  const described = new Set((document.info.description.match(/\b[1-5]\d\d\b/g) ?? []).map(Number))
  const operations = Object.values(document.paths).flatMap((ops) => Object.values(ops))
  return {
    listed: (method, path) => operation(method, path) !== undefined,
    documented: (method, path, status) => responseFor(operation(method, path), status) !== undefined || described.has(status),
    documentedAnywhere: (status) => operations.some((op) => responseFor(op, status) !== undefined) || described.has(status),
    bodySchema (method, path, status) {
      const schema = responseFor(operation(method, path), status)?.content?.['application/json']?.schema
      return schema === undefined ? errorSchema : compile(schema)
    },
    methods: (path) => new Set(Object.keys(document.paths[pathOf(path)] ?? {}).map((method) => method.toUpperCase()))
  }
}

/** The one path that answers 405 for its other methods, as the document's description says. */
const METHOD_NOT_ALLOWED_PATH = '/plants'

/** What the edge answers a request: its possible final statuses (none: the connection closes unanswered). */
interface Expected {
  statuses: number[]
  /** Node writes 100 Continue first: HTTP/1.1, and an Expect that mentions 100-continue. */
  continues: boolean
}

/** The edge's answer, in the order its checks apply, from docs/api.md and the served document. */
function expectedFor (request: Generated, check: Oracle, cors: boolean): Expected {
  const { method, path, version, expect: expectation } = request
  if (method === 'CONNECT') return { statuses: [], continues: false }
  // The authority-form is CONNECT's alone (RFC 9112 §3.2.3): Node's parser refuses it.
  if (!path.startsWith('/')) return { statuses: [400], continues: false }
  const continues = version === '1.1' && /(?:^|\W)100-continue(?:$|\W)/i.test(expectation)
  const answer = (...statuses: number[]): Expected => ({ statuses, continues })
  if (/%(?![0-9a-f]{2})/i.test(path)) return answer(400) // a bad URL, refused before routing
  if (cors && method === 'OPTIONS') return answer(204) // the preflight, answered in the first hook
  if (request.host === 'none' && version === '1.1') return answer(400)
  if (!check.listed(method, path)) return answer(pathOf(path) === METHOD_NOT_ALLOWED_PATH ? 405 : 404)
  if (expectation !== 'none' && expectation.toLowerCase() !== '100-continue') return answer(417)
  if (method !== 'POST') return answer(200) // the probes
  if (!request.token) return answer(401)
  return request.valid ? answer(200, 409) : answer(400, 413, 415)
}

describe('fuzzing the HTTP edge on real sockets (fast-check, bounded by runs)', () => {
  async function setUp (delayMs: number, cors: boolean) {
    const repository = storingRepository(delayMs)
    const app = await buildTestApp({
      repository,
      // Shedding is a documented 503, but no 5xx is what is asserted: pressure is off here.
      config: {
        BODY_LIMIT,
        ...HTTP_LIMITS,
        MAX_HEAP_USED_BYTES: 0,
        ...(cors ? { corsOrigins: [ORIGIN] } : {})
      }
    })
    // Node keeps an idle connection 1 s past KEEP_ALIVE_TIMEOUT by default: not here.
    app.server.keepAliveTimeoutBuffer = 0
    await app.listen({ port: 0, host: '127.0.0.1' })
    const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as Document
    return { app, repository, port: (app.server.address() as AddressInfo).port, check: oracle(document), document }
  }

  /** The app still listens and answers its liveness probe on a fresh connection. */
  async function expectAlive (app: App, port: number): Promise<void> {
    expect(app.server.listening).toBe(true)
    const { text } = await exchange(port, Buffer.from('GET /livez HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'))
    expect(text.startsWith('HTTP/1.1 200 ')).toBe(true)
  }

  /** No 5xx; a JSON body valid by its schema, an Error record whose `error` is the status for every non-2xx. */
  function checkBody (reply: Reply, head: boolean, validate: ValidateFunction, where: string): void {
    expect(reply.status, `${where}: no 5xx`).toBeLessThan(500)
    if (reply.status === 204) {
      expect(reply.body, where).toBe('')
      return
    }
    expect(reply.headers['content-type'], where).toBe('application/json; charset=utf-8')
    if (head) return
    const body = JSON.parse(reply.body) as unknown
    expect(validate(body), `${where}: ${reply.status} ${reply.body} matches the documented schema: ${JSON.stringify(validate.errors)}`).toBe(true)
    if (reply.status >= 300) expect((body as { error: unknown }).error, where).toBe(reply.status)
  }

  /** Checks one answer against the edge's model and the document. */
  function checkAnswer ({ interim, reply }: Answer, request: Generated, expected: Expected, check: Oracle): void {
    const where = describeRequest(request)
    expect(expected.statuses, `${where}: the edge's answer (${reply.status} ${reply.body})`).toContain(reply.status)
    expect(interim, `${where}: 100 Continue first exactly when Node writes it`).toEqual(expected.continues ? [100] : [])
    expect(check.documented(request.method, request.path, reply.status),
      `${where}: ${reply.status} documented for the operation or named in the description`).toBe(true)
    if (reply.status === 405) {
      expect(new Set((reply.headers.allow ?? '').split(/,\s*/)),
      `${where}: Allow lists the methods the document lists for the path`).toEqual(check.methods(request.path))
    }
    checkBody(reply, request.method === 'HEAD', check.bodySchema(request.method, request.path, reply.status), where)
  }

  /**
   * The exchange's answers: one per request, in order, up to and including the first that closes the
   * connection or up to a CONNECT (none after it), nothing else on the wire, and the connection closed
   * by the server. Returns how many were 200s to POST /plants, and the requests left unanswered.
   */
  function checkExchange ({ text, closed }: { text: string, closed: boolean }, requests: Generated[], check: Oracle, cors: boolean) {
    const expectations = requests.map((request) => expectedFor(request, check, cors))
    // A HEAD's reply has no body, unless the parser refused the request line (no request, no HEAD).
    const { answers, rest } = splitReplies(text, requests.map((request) => request.method === 'HEAD' && request.path.startsWith('/')))
    let due = 0
    for (const expected of expectations) {
      if (expected.statuses.length === 0) break
      const answer = answers[due++]
      if (answer === undefined || closes(answer.reply)) break
    }
    const where = requests.map(describeRequest).join(' then ')
    expect(answers.map(({ reply }) => reply.status), `${where}: one final reply per request up to the first that closes`).toHaveLength(due)
    expect(rest, `${where}: nothing on the wire after the replies`).toBe('')
    expect(closed, `${where}: the server answered everything and closed the connection within ${WAIT_MS} ms`).toBe(true)
    let answered200 = 0
    answers.forEach((answer, index) => {
      const request = requests[index] as Generated
      checkAnswer(answer, request, expectations[index] as Expected, check)
      if (answer.reply.status === 200 && request.method === 'POST') answered200++
    })
    return { answered200, unanswered: requests.slice(due) }
  }

  /** Nothing stored that no 200 announced, once the store has settled. */
  async function expectNothingStoredUnanswered (repository: ReturnType<typeof storingRepository>, before: number, answered200: number): Promise<void> {
    while (repository.pending > 0) await sleep(1)
    // A plant stored is a plant some 200 said was stored (an identical replay is a 200 that stores nothing).
    expect(repository.created - before).toBeLessThanOrEqual(answered200)
  }

  for (const [delayMs, cors] of [[0, false], [2, true]] as const) {
    it('answers generated requests, alone or pipelined, one reply each as documented, stores none unanswered ' +
      `(store answering ${delayMs === 0 ? 'in the same turn' : `${delayMs} ms later`}, ${cors ? 'with' : 'without'} ` +
        'CORS_ORIGINS)', { timeout: 120000 }, async () => {
      const { app, repository, port, check, document } = await setUp(delayMs, cors)
      let sequence = 0
      let runs = 0
      await fc.assert(fc.asyncProperty(requestArbitrary(document), fc.nat({ max: 2 }), fc.boolean(), async (request, behind, close) => {
        const requests = [request, ...Array.from({ length: behind }, () => pipelined(++sequence))]
        // The last request asks for Connection: close (the exchange's end), the first one now and then too.
        const bytes = Buffer.concat(requests.map((one, index) => render(one, index === requests.length - 1 || (index === 0 && close))))
        const before = repository.created
        const { answered200, unanswered } = checkExchange(await exchange(port, bytes), requests, check, cors)
        let replayed200 = 0
        for (const lost of unanswered.filter((one) => one.valid)) {
          // Not stored, or stored as it was sent: either way its identical replay answers 200.
          const { answers } = splitReplies((await exchange(port, render(lost, true))).text, [false])
          expect(answers.map(({ reply }) => reply.status), `the replay of ${describeRequest(lost)}, unanswered`).toEqual([200])
          replayed200++
        }
        await expectNothingStoredUnanswered(repository, before, answered200 + replayed200)
        runs++
      }), { numRuns: RUNS })
      expect(runs).toBeGreaterThanOrEqual(RUNS)
      await expectAlive(app, port)
    })
  }

  it('answers hostile bytes (random, or a valid create cut or corrupted) with documented Error records only, then closes, storing nothing unanswered',
    { timeout: 120000 }, async () => {
      const { app, repository, port, check } = await setUp(0, false)
      const valid = render(pipelined(0), true)
      const hostile = fc.oneof(
        fc.uint8Array({ minLength: 1, maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
        fc.nat({ max: valid.length }).map((end) => valid.subarray(0, Math.max(1, end))),
        fc.tuple(fc.nat({ max: valid.length - 1 }), fc.integer({ min: 0, max: 255 })).map(([at, byte]) => {
          const copy = Buffer.from(valid)
          copy[at] = byte
          return copy
        }),
        fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.concat([valid.subarray(0, valid.indexOf('\r\n\r\n') + 4), Buffer.from(bytes)]))
      )
      let runs = 0
      // Mostly followed by a well-formed request that closes the connection, so that the exchange ends
      // at once whatever the hostile bytes left behind; now and then not, so that what never completes
      // gets its 408 (REQUEST_TIMEOUT) and an idle keep-alive connection its close (KEEP_ALIVE_TIMEOUT).
      const LAST = Buffer.from('GET /livez HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')
      await fc.assert(fc.asyncProperty(hostile, fc.nat({ max: 4 }), async (bytes, last) => {
        const before = repository.created
        const { text, closed } = await exchange(port, last === 0 ? bytes : Buffer.concat([bytes, LAST]))
        const { answers, rest } = splitReplies(text, [])
        const replies = answers.map(({ reply }) => reply)
        // Whatever the bytes: the server ends the exchange (a reply, a 408 for what never completes, or a close).
        expect(closed, `the server closed within ${WAIT_MS} ms; received ${JSON.stringify(text.slice(0, 200))}`).toBe(true)
        expect(rest, 'nothing but replies on the wire').toBe('')
        // No reply after one that closes the connection.
        replies.forEach((reply, index) => {
          if (index < replies.length - 1) {
            expect(closes(reply),
        `reply ${index + 1} of ${replies.length} closes the connection, and more follow`).toBe(false)
          }
        })
        let answered200 = 0
        // The closing GET /livez's own 200, when it was answered, is the last reply.
        const hostileReplies = last !== 0 && replies.at(-1)?.body === '{"status":"ok"}' ? replies.slice(0, -1) : replies
        for (const reply of hostileReplies) {
          const where = `hostile bytes ${JSON.stringify(bytes.toString('latin1').slice(0, 200))}`
          expect(check.documentedAnywhere(reply.status), `${where}: ${reply.status} documented for some operation or named in the description`).toBe(true)
          // Hostile bytes are a POST /plants, cut, corrupted or replaced.
          checkBody(reply, false, check.bodySchema('POST', '/plants', reply.status), where)
          if (reply.status === 200) answered200++
        }
        await expectNothingStoredUnanswered(repository, before, answered200)
        runs++
      }), { numRuns: RUNS })
      expect(runs).toBeGreaterThanOrEqual(RUNS)
      await expectAlive(app, port)
    })
})
