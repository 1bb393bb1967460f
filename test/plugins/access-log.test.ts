import { createHash } from 'node:crypto'
import pino from 'pino'
import { describe, expect, it, vi } from 'vitest'
import type { PlantRepository } from '../../src/plants/plant-repository.js'
import { StoreUnavailableError } from '../../src/errors.js'
import { lineLogger } from '../../src/plugins/access-log.js'
import { createTokenSet } from '../../src/plugins/auth.js'
import { JSON_AUTH, TOKEN, buildTestApp, postPlant } from '../helpers.js'

const parse = (lines: string[]) => lines.map((line) => JSON.parse(line) as Record<string, unknown>)

describe('access log', () => {
  it('writes one line per completed request with id, method, route, status and duration', async () => {
    const lines: string[] = []
    const app = await buildTestApp({ logLines: lines })
    const res = await postPlant(app, { id: 1, name: 'fern' })
    const entries = parse(lines)
    expect(entries).toHaveLength(1)
    expect(entries[0]).toMatchObject({ level: 30, reqId: res.headers['x-request-id'], method: 'POST', route: '/plants', client: `sha256:${createHash('sha256').update(TOKEN).digest('hex').slice(0, 12)}`, status: 200, msg: 'request' })
    expect(typeof entries[0]?.ms).toBe('number')
  })

  it('writes method and route once per line, from the route\'s child logger or, without a route (404, and 405: no route takes DELETE on /plants), from the request', async () => {
    const lines: string[] = []
    const app = await buildTestApp({ logLines: lines })
    await postPlant(app, { id: 1, name: 'fern' })
    await postPlant(app, { id: 2, name: 'ivy' })
    await app.inject({ method: 'DELETE', url: '/nope' })
    await app.inject({ method: 'DELETE', url: '/plants' })
    const entries = parse(lines)
    expect(entries.map((entry) => [entry.method, entry.route, entry.status])).toEqual([['POST', '/plants', 200], ['POST', '/plants', 200], ['DELETE', undefined, 404], ['DELETE', undefined, 405]])
    for (const line of lines) {
      expect(line.match(/"method"/g)).toHaveLength(1)
      expect(line.match(/"route"/g)?.length ?? 0).toBeLessThanOrEqual(1)
      expect(line.match(/"reqId"/g)).toHaveLength(1)
      expect(line.match(/"client"/g)?.length ?? 0).toBeLessThanOrEqual(1)
    }
  })

  it('never logs the token or the Authorization header, on success, 401, 400 and 500', async () => {
    const lines: string[] = []
    const app = await buildTestApp({ logLines: lines })
    await postPlant(app, { id: 1, name: 'fern' })
    await postPlant(app, '{"id":', { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' })
    await postPlant(app, { id: 1, name: 'x' }, { authorization: `Bearer ${TOKEN}-wrong`, 'content-type': 'application/json' })
    await app.inject({ method: 'GET', url: `/nope?access_token=${TOKEN}`, headers: { authorization: `Bearer ${TOKEN}` } })
    expect(lines.length).toBeGreaterThanOrEqual(4)
    for (const line of lines) {
      expect(line).not.toContain(TOKEN)
      expect(line.toLowerCase()).not.toContain('authorization')
      expect(line).not.toContain('access_token')
    }
  })

  it('carries the request id on every line of a request: the 500 and 503 error lines and the access line', async () => {
    // A 503 of no known kind: store failures are logged by the store's wrapper instead (next test).
    for (const failure of [new Error('unexpected'), Object.assign(new Error('upstream refused'), { statusCode: 503 })]) {
      const lines: string[] = []
      const repository: PlantRepository = {
        insert: async () => { throw failure },
        ready: async () => {},
        close: async () => {}
      }
      const app = await buildTestApp({ repository, logLines: lines })
      const res = await postPlant(app, { id: 1, name: 'fern' }, { ...JSON_AUTH, 'x-request-id': 'caller-id-1' })
      expect(res.headers['x-request-id']).toBe('caller-id-1')
      const entries = parse(lines)
      expect(entries).toHaveLength(2)
      expect(entries[0]).toMatchObject({ level: res.statusCode === 500 ? 50 : 40, reqId: 'caller-id-1', msg: res.statusCode === 500 ? 'request failed' : 'request refused' })
      expect(entries[1]).toMatchObject({ level: 30, reqId: 'caller-id-1', status: res.statusCode, msg: 'request' })
      // Once, not twice: the access line is not written through a child that already has the id.
      for (const line of lines) expect(line.match(/"reqId"/g)).toHaveLength(1)
    }
  })
  it('writes only the access line for a request refused by a store failure, with its 503 Error record and Retry-After', async () => {
    const lines: string[] = []
    const repository: PlantRepository = {
      insert: async () => { throw new StoreUnavailableError({ cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }) }) },
      ready: async () => {},
      close: async () => {}
    }
    const app = await buildTestApp({ repository, logLines: lines })
    const res = await postPlant(app, { id: 1, name: 'fern' }, { ...JSON_AUTH, 'x-request-id': 'caller-id-2' })
    expect(res.statusCode).toBe(503)
    expect(res.headers['retry-after']).toBe('1')
    expect(res.json()).toEqual({ error: 503, message: 'the plant store is unavailable, retry later' })
    expect(parse(lines)).toEqual([expect.objectContaining({ level: 30, reqId: 'caller-id-2', status: 503, msg: 'request' })])
  })

  describe('client', () => {
    const sha256 = (token: string) => createHash('sha256').update(token).digest('hex')
    const json = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' })

    it('is the client name for a named token, plain or hashed', async () => {
      const lines: string[] = []
      const app = await buildTestApp({ logLines: lines, tokens: [{ name: 'ci', token: 'ci-token-123' }, { name: 'billing', sha256: sha256('billing-secret-1') }] })
      await postPlant(app, { id: 1, name: 'fern' }, json('ci-token-123'))
      await postPlant(app, { id: 2, name: 'fern' }, json('billing-secret-1'))
      expect(parse(lines).map((entry) => [entry.client, entry.status])).toEqual([['ci', 200], ['billing', 200]])
    })

    it('follows a reload: the same token under a new name is logged under the new name', async () => {
      const lines: string[] = []
      const tokenSet = createTokenSet([{ name: 'ci', token: 'ci-token-123' }])
      const app = await buildTestApp({ logLines: lines, tokenSet })
      await postPlant(app, { id: 1, name: 'fern' }, json('ci-token-123'))
      tokenSet.replace([{ name: 'deploy', token: 'ci-token-123' }])
      await postPlant(app, { id: 1, name: 'fern' }, json('ci-token-123'))
      expect(parse(lines).map((entry) => entry.client)).toEqual(['ci', 'deploy'])
    })

    it('is sha256: and 12 hex digits of the token\'s SHA-256 for an unnamed token: the same in another app, never the token or its start', async () => {
      const token = 'Unnamed-token-0123456789'
      const labels: unknown[] = []
      for (const tokens of [[token], ['another-token', token]]) {
        const lines: string[] = []
        const app = await buildTestApp({ logLines: lines, tokens })
        await postPlant(app, { id: 1, name: 'fern' }, json(token))
        labels.push(parse(lines)[0]?.client)
        expect(lines.join('\n')).not.toContain(token.slice(0, 8))
      }
      expect(labels).toEqual([`sha256:${sha256(token).slice(0, 12)}`, `sha256:${sha256(token).slice(0, 12)}`])
    })

    it('is on the lines of accepted requests whatever their status (400, 500), and absent without an accepted token (401, 404)', async () => {
      const lines: string[] = []
      const repository: PlantRepository = {
        insert: async () => { throw new Error('unexpected') },
        ready: async () => {},
        close: async () => {}
      }
      const app = await buildTestApp({ logLines: lines, repository, tokens: [{ name: 'ci', token: 'ci-token-123' }] })
      await postPlant(app, '{"id":', json('ci-token-123'))
      await postPlant(app, { id: 1, name: 'fern' }, json('ci-token-123'))
      await postPlant(app, { id: 1, name: 'fern' }, json('ci-token-1234'))
      await postPlant(app, { id: 1, name: 'fern' }, { 'content-type': 'application/json' })
      await app.inject({ method: 'GET', url: '/nope', headers: { authorization: 'Bearer ci-token-123' } })
      const access = parse(lines).filter((entry) => entry.msg === 'request')
      expect(access.map((entry) => [entry.status, entry.client])).toEqual([[400, 'ci'], [500, 'ci'], [401, undefined], [401, undefined], [404, undefined]])
      for (const line of lines) expect(line).not.toContain('ci-token')
    })
  })

  it('puts a valid traceparent\'s trace id and parent span id on the request\'s line, on success, 401 and 404', async () => {
    const lines: string[] = []
    const app = await buildTestApp({ logLines: lines })
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
    await postPlant(app, { id: 1, name: 'fern' }, { ...JSON_AUTH, traceparent })
    await postPlant(app, { id: 2, name: 'fern' }, { 'content-type': 'application/json', traceparent })
    await app.inject({ method: 'GET', url: '/nope', headers: { traceparent } })
    await postPlant(app, { id: 3, name: 'fern' })
    const entries = parse(lines)
    expect(entries.map((entry) => [entry.status, entry.traceId, entry.parentSpanId])).toEqual([
      [200, '4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7'],
      [401, '4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7'],
      [404, '4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7'],
      [200, undefined, undefined]
    ])
  })

  it('ignores an invalid traceparent: the request is served as without one, never a 400', async () => {
    const lines: string[] = []
    const app = await buildTestApp({ logLines: lines })
    const res = await postPlant(app, { id: 1, name: 'fern' }, { ...JSON_AUTH, traceparent: '00-not-a-trace-01' })
    expect(res.statusCode).toBe(200)
    const [entry] = parse(lines)
    expect(entry).toMatchObject({ status: 200 })
    expect(entry).not.toHaveProperty('traceId')
    expect(entry).not.toHaveProperty('parentSpanId')
  })
})

describe('the quick access line (lineLogger)', () => {
  const logger = (options: pino.LoggerOptions = {}) => {
    const lines: string[] = []
    const root = pino({ timestamp: () => ',"time":1700000000000', ...options }, { write: (line: string) => { lines.push(line) } })
    return { lines, log: root.child({ method: 'POST', route: '/plants' }).child({ client: 'billing' }) }
  }
  const cases: Array<[string, number, number]> = [
    ['9d8bfb795d8009e6-1', 200, 1.16],
    ['caller-"quoted"-\\id', 409, 0],
    ['x', 503, 12345.67],
    ['a'.repeat(128), 400, 0.01]
  ]

  it('writes, byte for byte, the line pino\'s info() writes for the same fields', () => {
    const quick = logger()
    const slow = logger()
    const { write } = lineLogger(quick.log)
    expect(write).toBeDefined()
    for (const [reqId, status, ms] of cases) {
      write?.(reqId, status, ms)
      slow.log.info({ reqId, status, ms }, 'request')
    }
    expect(quick.lines).toEqual(slow.lines)
    expect(JSON.parse(quick.lines[1] ?? '')).toMatchObject({ reqId: 'caller-"quoted"-\\id', client: 'billing', status: 409, msg: 'request' })
  })

  it('writes every duration as pino does: whole, one and two decimals, below 1, long ones, and not rounded to hundredths', () => {
    const quick = logger()
    const slow = logger()
    const { write } = lineLogger(quick.log)
    const durations = [0, 0.01, 0.05, 0.1, 0.2, 1, 1.2, 1.16, 9.99, 10, 100.5, 12345.67, 21474836.47, 21474836.48, 1e9 + 0.25, 1.234, Math.PI, Number.NaN, Number.POSITIVE_INFINITY]
    for (let hundredths = 0; hundredths < 20000; hundredths += 7) durations.push(Math.round(hundredths) / 100)
    for (let i = 0; i < 2000; i++) durations.push(Math.round(Math.random() * 1e7) / 100)
    for (const ms of durations) {
      write?.('a', 200, ms)
      slow.log.info({ reqId: 'a', status: 200, ms }, 'request')
    }
    expect(quick.lines).toEqual(slow.lines)
  })

  it('writes pino\'s default timestamp as pino does, made again when the millisecond changes', () => {
    const clock = [1700000000000, 1700000000000, 1700000000001, 1799999999999, 1799999999999]
    const lines = (write: (log: pino.Logger) => void) => {
      const out: string[] = []
      const log = pino({}, { write: (line: string) => { out.push(line) } }).child({ method: 'POST', route: '/plants' })
      const now = vi.spyOn(Date, 'now')
      for (const t of clock) now.mockReturnValueOnce(t)
      try {
        for (let i = 0; i < clock.length; i++) write(log)
      } finally {
        now.mockRestore()
      }
      return out
    }
    const quick = lines((log) => { lineLogger(log).write?.('a', 200, 1.5) })
    const slow = lines((log) => { log.info({ reqId: 'a', status: 200, ms: 1.5 }, 'request') })
    expect(quick).toEqual(slow)
    expect(quick.map((line) => JSON.parse(line).time)).toEqual(clock)
  })

  it('quotes every request id as pino does, whatever its characters', () => {
    const quick = logger()
    const slow = logger()
    const { write } = lineLogger(quick.log)
    for (const reqId of ['', 'plain', 'with space', 'tab\there', 'new\nline', 'quote"', 'back\\slash', 'caf\u00e9', '\u007f', '~!#$%&*+./:;<=>?@[]^_`{|}', 'x'.repeat(150)]) {
      write?.(reqId, 200, 1)
      slow.log.info({ reqId, status: 200, ms: 1 }, 'request')
    }
    expect(quick.lines).toEqual(slow.lines)
  })

  it('follows the child\'s level and bindings as they change', () => {
    const quick = logger()
    const { write } = lineLogger(quick.log)
    quick.log.level = 'warn'
    write?.('a', 200, 1)
    expect(quick.lines).toEqual([])
    quick.log.level = 'info'
    quick.log.setBindings({ client: 'ci' })
    write?.('a', 200, 1)
    expect(JSON.parse(quick.lines[0] ?? '')).toMatchObject({ client: 'ci', reqId: 'a' })
  })

  it('leaves the line to info() when pino is configured in a way that could change it', () => {
    for (const options of [
      { mixin: () => ({}) },
      { hooks: { logMethod (this: pino.Logger, args: Parameters<pino.LogFn>, method: pino.LogFn) { method.apply(this, args) } } },
      { formatters: { log: (object: Record<string, unknown>) => object } },
      { serializers: { status: (status: number) => status } },
      { redact: ['reqId'] },
      { nestedKey: 'payload' },
      { msgPrefix: '[x] ' }
    ] satisfies pino.LoggerOptions[]) {
      expect(lineLogger(logger(options).log).write).toBeUndefined()
    }
  })
})
