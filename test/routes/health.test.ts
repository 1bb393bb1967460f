import { describe, expect, it } from 'vitest'
import { WritesFailingError } from '../../src/errors.js'
import type { PlantRepository } from '../../src/plants/plant-repository.js'
import { buildTestApp } from '../helpers.js'

/** A generated request id: 16 hex digits of this process's random prefix, then a base-36 sequence number. */
const GENERATED_ID = /^[0-9a-f]{16}-[0-9a-z]+$/

describe('health routes', () => {
  it('answers /livez 200 without a token', async () => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'GET', url: '/livez' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ status: 'ok' })
  })

  it('answers /readyz 200 without a token when the store is ready', async () => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'GET', url: '/readyz' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ status: 'ready' })
  })

  it('answers /readyz 503 Error with Retry-After while the store is unreachable', async () => {
    const repository: PlantRepository = {
      insert: async () => 'created',
      ready: async () => { throw new Error('connect ECONNREFUSED 127.0.0.1:5432') },
      close: async () => {}
    }
    const app = await buildTestApp({ repository })
    const res = await app.inject({ method: 'GET', url: '/readyz' })
    expect(res.statusCode).toBe(503)
    expect(res.headers['retry-after']).toBe('1')
    expect(res.json()).toEqual({ error: 503, message: 'the service is not ready' })
  })

  it('answers /readyz 503 Error naming the reason while creates fail and the store still answers reads', async () => {
    const repository: PlantRepository = {
      insert: async () => 'created',
      ready: async () => { throw new WritesFailingError('6012') },
      close: async () => {}
    }
    const app = await buildTestApp({ repository })
    const res = await app.inject({ method: 'GET', url: '/readyz' })
    expect(res.statusCode).toBe(503)
    expect(res.headers['retry-after']).toBe('1')
    expect(res.json()).toEqual({ error: 503, message: 'the service is not ready: creates have failed for 6012 ms with no success' })
  })
})

describe('readiness during shutdown', () => {
  it('answers /readyz 503 Error once shutdown has begun (SIGTERM with SHUTDOWN_DELAY_MS), while the store is still fine', async () => {
    const app = await buildTestApp({ config: { SHUTDOWN_DELAY_MS: 300 } })
    expect(app.closing).toBe(false)
    const shuttingDown = app.shutDown('SIGTERM')
    expect(app.closing).toBe(true)
    const res = await app.inject({ method: 'GET', url: '/readyz' })
    expect(res.statusCode).toBe(503)
    expect(res.headers.connection).toBe('close')
    expect(res.json()).toEqual({ error: 503, message: 'the service is not ready' })
    expect((await app.inject({ method: 'GET', url: '/livez' })).statusCode).toBe(200)
    await shuttingDown
  })
})

describe('request ids', () => {
  it('returns the caller\'s x-request-id', async () => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'GET', url: '/livez', headers: { 'x-request-id': 'abc-123' } })
    expect(res.headers['x-request-id']).toBe('abc-123')
  })

  it('replaces an x-request-id that is too long or not printable ASCII with a generated one', async () => {
    const app = await buildTestApp()
    for (const given of ['x'.repeat(129), 'has space', 'ünï']) {
      const res = await app.inject({ method: 'GET', url: '/livez', headers: { 'x-request-id': given } })
      expect(res.headers['x-request-id']).toMatch(GENERATED_ID)
    }
  })

  it('generates a different id for each request without one, on error replies too', async () => {
    const app = await buildTestApp()
    const a = await app.inject({ method: 'GET', url: '/nope' })
    const b = await app.inject({ method: 'POST', url: '/plants' })
    expect(a.headers['x-request-id']).toMatch(GENERATED_ID)
    expect(b.headers['x-request-id']).toMatch(GENERATED_ID)
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id'])
  })

  it('makes ids with one random prefix per process and a rising sequence number', async () => {
    const app = await buildTestApp()
    const ids = []
    for (let i = 0; i < 3; i++) ids.push((await app.inject({ method: 'GET', url: '/livez' })).headers['x-request-id'] as string)
    const parts = ids.map((id) => id.split('-'))
    expect(new Set(parts.map(([prefix]) => prefix)).size).toBe(1)
    const numbers = parts.map(([, number]) => parseInt(number ?? '', 36))
    expect(numbers[1]).toBe((numbers[0] ?? 0) + 1)
    expect(numbers[2]).toBe((numbers[0] ?? 0) + 2)
  })
})
