import '@fastify/under-pressure'
import { describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import { overload } from '../../src/plugins/overload.js'
import { buildTestApp, postPlant, DEFAULT_CONFIG, until } from '../helpers.js'
import { countingRepository } from './hardening-helpers.js'

const busyFor = (ms: number): void => {
  const end = Date.now() + ms
  while (Date.now() < end) { /* saturating the event loop is the point */ }
}

describe('overload shedding (under-pressure)', () => {
  it('answers 503 Error with Retry-After while the event loop is saturated, keeps /livez up, reports on /readyz, and recovers', async () => {
    const app = await buildTestApp({ config: { MAX_EVENT_LOOP_DELAY_MS: 50 } })
    await app.ready()
    // A loop that is busy 150 ms at a time, as under a flood of expensive requests.
    const blocker = setInterval(() => busyFor(150), 1)
    try {
      await until(() => app.isUnderPressure(), 10000, 'pressure seen')
      const shed = await postPlant(app, { id: 1, name: 'fern' })
      expect(shed.statusCode).toBe(503)
      expect(shed.headers['retry-after']).toBe('1')
      expect(shed.json()).toEqual({ error: 503, message: 'the service is overloaded, retry later' })

      const live = await app.inject({ method: 'GET', url: '/livez' })
      expect(live.statusCode).toBe(200)

      const ready = await app.inject({ method: 'GET', url: '/readyz' })
      expect(ready.statusCode).toBe(503)
      expect(ready.json()).toEqual({ error: 503, message: 'the service is overloaded, retry later' })
    } finally {
      clearInterval(blocker)
    }
    await until(() => !app.isUnderPressure(), 10000, 'pressure gone')
    const served = await postPlant(app, { id: 1, name: 'fern' })
    expect(served.statusCode).toBe(200)
  })

  it('sheds before authentication: an overloaded process does not spend time on tokens', async () => {
    // A resident memory limit of 1 byte is always exceeded: pressure from the start, checked as the app registers.
    const app = await buildTestApp({ config: { MAX_RSS_ANON_BYTES: 1 } })
    await app.ready()
    await until(() => app.isUnderPressure(), 5000, 'pressure seen')
    const res = await postPlant(app, { id: 1, name: 'fern' }, { 'content-type': 'application/json' })
    expect(res.statusCode).toBe(503)
    expect(res.headers['retry-after']).toBe('1')
    expect(res.headers['www-authenticate']).toBeUndefined()
  })

  it('answers another method on /plants 405 even under pressure (the edge refuses it first: nothing is read, and a retry would not help)', async () => {
    const app = await buildTestApp({ config: { MAX_RSS_ANON_BYTES: 1 } })
    await app.ready()
    await until(() => app.isUnderPressure(), 5000, 'pressure seen')
    const res = await app.inject({ method: 'GET', url: '/plants' })
    expect(res.statusCode).toBe(405)
    expect(res.headers.allow).toBe('POST')
    expect(res.json()).toEqual({ error: 405, message: 'GET is not allowed on /plants; allowed: POST' })
    // The same app sheds what the edge lets through.
    expect((await postPlant(app, { id: 1, name: 'fern' })).statusCode).toBe(503)
  })

  it('never reaches the store for a shed request (RSS limit)', async () => {
    const repository = countingRepository()
    const app = await buildTestApp({
      repository,
      config: { MAX_RSS_BYTES: 1 }
    })
    await app.ready()
    await until(() => app.isUnderPressure(), 5000, 'pressure seen')
    expect((await postPlant(app, { id: 7, name: 'fern' })).statusCode).toBe(503)
    expect(repository.inserts).toBe(0)
  })

  it('sheds with 503 and Retry-After while the real resident anonymous memory is at MAX_RSS_ANON_BYTES, and not below it', async () => {
    const repository = countingRepository()
    const over = await buildTestApp({ repository, config: { MAX_HEAP_USED_BYTES: 0, MAX_RSS_ANON_BYTES: 1 } })
    await over.ready()
    const shed = await postPlant(over, { id: 7, name: 'fern' })
    expect(shed.statusCode).toBe(503)
    expect(shed.headers['retry-after']).toBe('1')
    expect(repository.inserts).toBe(0)
    const under = await buildTestApp({ config: { MAX_HEAP_USED_BYTES: 0, MAX_RSS_ANON_BYTES: 2 ** 50 } })
    expect((await postPlant(under, { id: 7, name: 'fern' })).statusCode).toBe(200)
  })

  it('answers again once resident memory is back under MAX_RSS_ANON_BYTES: a burst is a 503 while it lasts, nothing after', { timeout: 20000 }, async () => {
    let resident = 900
    const app = Fastify()
    // Only the memory check: a loaded machine's event-loop delay must not be what is seen.
    await app.register(overload, {
      MAX_EVENT_LOOP_DELAY_MS: 0,
      MAX_HEAP_USED_BYTES: 0,
      MAX_RSS_BYTES: 0,
      MAX_RSS_ANON_BYTES: 1000,
      sampleIntervalMs: 10,
      rssAnonBytes: () => resident
    })
    app.get('/work', async () => 'done')
    expect((await app.inject('/work')).statusCode).toBe(200)
    resident = 1000
    await until(() => app.isUnderPressure(), 5000, 'pressure seen')
    const shed = await app.inject('/work')
    expect(shed.statusCode).toBe(503)
    resident = 999
    await until(() => !app.isUnderPressure(), 5000, 'pressure gone')
    expect((await app.inject('/work')).statusCode).toBe(200)
    await app.close()
  })

  it('has all checks on by default except RSS and resident anonymous memory, which depend on the container', () => {
    expect(DEFAULT_CONFIG.MAX_EVENT_LOOP_DELAY_MS).toBe(200)
    expect(DEFAULT_CONFIG.MAX_HEAP_USED_BYTES).toBeGreaterThan(0)
    expect(DEFAULT_CONFIG.MAX_RSS_BYTES).toBe(0)
    expect(DEFAULT_CONFIG.MAX_RSS_ANON_BYTES).toBe(0)
  })
})
