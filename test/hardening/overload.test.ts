import '@fastify/under-pressure'
import { describe, expect, it } from 'vitest'
import { defaultOverloadLimits } from '../../src/config.js'
import { buildTestApp, postPlant } from '../helpers.js'
import { countingRepository, until } from './hardening-helpers.js'

const busyFor = (ms: number): void => {
  const end = Date.now() + ms
  while (Date.now() < end) { /* saturating the event loop is the point */ }
}

describe('overload shedding (under-pressure)', () => {
  it('answers 503 Error with Retry-After while the event loop is saturated, keeps /livez up, reports on /readyz, and recovers', async () => {
    const app = await buildTestApp({
      config: { overload: { ...defaultOverloadLimits(), maxEventLoopDelayMs: 50, sampleIntervalMs: 100 } }
    })
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
    // A heap limit of 1 byte is always exceeded: pressure from the first sample on.
    const app = await buildTestApp({
      config: { overload: { ...defaultOverloadLimits(), maxHeapUsedBytes: 1, sampleIntervalMs: 10 } }
    })
    await app.ready()
    await until(() => app.isUnderPressure(), 5000, 'pressure seen')
    const res = await postPlant(app, { id: 1, name: 'fern' }, { 'content-type': 'application/json' })
    expect(res.statusCode).toBe(503)
    expect(res.headers['retry-after']).toBe('1')
    expect(res.headers['www-authenticate']).toBeUndefined()
  })

  it('answers another method on /plants 405 even under pressure (the edge refuses it first: nothing is read, and a retry would not help)', async () => {
    const app = await buildTestApp({
      config: { overload: { ...defaultOverloadLimits(), maxHeapUsedBytes: 1, sampleIntervalMs: 10 } }
    })
    await app.ready()
    await until(() => app.isUnderPressure(), 5000, 'pressure seen')
    const res = await app.inject({ method: 'GET', url: '/plants' })
    expect(res.statusCode).toBe(405)
    expect(res.headers.allow).toBe('POST, OPTIONS')
    expect(res.json()).toEqual({ error: 405, message: 'GET is not allowed on /plants; allowed: POST, OPTIONS' })
    // The same app sheds what the edge lets through.
    expect((await postPlant(app, { id: 1, name: 'fern' })).statusCode).toBe(503)
  })

  it('never reaches the store for a shed request (RSS limit)', async () => {
    const repository = countingRepository()
    const app = await buildTestApp({
      repository,
      config: { overload: { ...defaultOverloadLimits(), maxRssBytes: 1, sampleIntervalMs: 10 } }
    })
    await app.ready()
    await until(() => app.isUnderPressure(), 5000, 'pressure seen')
    expect((await postPlant(app, { id: 7, name: 'fern' })).statusCode).toBe(503)
    expect(repository.inserts).toBe(0)
  })

  it('has all checks on by default except RSS, which depends on the container', () => {
    const limits = defaultOverloadLimits()
    expect(limits.maxEventLoopDelayMs).toBe(200)
    expect(limits.maxHeapUsedBytes).toBeGreaterThan(0)
    expect(limits.maxRssBytes).toBe(0)
  })
})
