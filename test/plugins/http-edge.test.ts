import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../src/observability/metrics.js'
import { buildTestApp, sampleValue } from '../helpers.js'

describe('the HTTP edge', () => {
  it('answers for the whole app, outside its own scope: the Error record and its headers on a route it does not own', async () => {
    const res = await (await buildTestApp()).inject({ method: 'POST', url: '/plants', payload: {} })
    expect([res.statusCode, res.json()]).toEqual([401, { error: 401, message: 'missing authorization header' }])
    expect([res.headers['x-content-type-options'], res.headers['cache-control']]).toEqual(['nosniff', 'no-store'])
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f]{16}-[0-9a-z]+$/)
  })

  it('keeps a caller\'s printable request id of at most 128 characters, and makes a fresh one for anything else', async () => {
    const app = await buildTestApp()
    const id = async (given?: string) => (await app.inject({
      method: 'GET',
      url: '/livez',
      headers: given === undefined
        ? {}
        : { 'x-request-id': given }
    })).headers['x-request-id']
    expect(await id('abc-1')).toBe('abc-1')
    expect(await id('x'.repeat(128))).toBe('x'.repeat(128))
    const made = [await id(), await id('x'.repeat(129)), await id('a b'), await id('')]
    for (const value of made) expect(value).toMatch(/^[0-9a-f]{16}-[0-9a-z]+$/)
    expect(new Set(made).size).toBe(made.length)
  })

  it('answers a bad URL with the Error record and the usual headers, one access line, counted as an unmatched request of 0 s', async () => {
    const metrics = createMetrics()
    const logLines: string[] = []
    const app = await buildTestApp({ metrics, logLines })
    const res = await app.inject({ method: 'GET', url: '/plants%', headers: { 'x-request-id': 'bad-url' } })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toEqual({ error: 400, message: "'/plants%' is not a valid url component" })
    expect(res.headers['x-request-id']).toBe('bad-url')
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(res.headers['cache-control']).toBe('no-store')
    expect(logLines.map((line) => JSON.parse(line) as Record<string, unknown>)).toMatchObject([{
      reqId: 'bad-url',
      method: 'GET',
      status: 400,
      ms: 0,
      msg: 'request'
    }])
    const labels = { http_request_method: 'GET', http_route: 'unmatched', http_response_status_code: '400' }
    const text = await metrics.exposition.metrics()
    expect(sampleValue(text, 'http_server_request_duration_seconds_count', labels)).toBe(1)
    expect(sampleValue(text, 'http_server_request_duration_seconds_sum', labels)).toBe(0)
  })
})
