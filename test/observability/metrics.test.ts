import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import { StoreUnavailableError } from '../../src/errors.js'
import type { PlantRepository } from '../../src/plants/plant-repository.js'
import { createMetrics } from '../../src/observability/metrics.js'
import { AUTH, buildTestApp, postPlant, sampleValue, until } from '../helpers.js'

const DURATION = 'http_server_request_duration_seconds_count'
const requests = (method: string, route: string, status: number) =>
  ({ http_request_method: method, http_route: route, http_response_status_code: String(status) })

describe('request metrics (http_server_request_duration_seconds)', () => {
  it('counts a routed request under its method, route template and status, with its duration in the buckets and the sum', async () => {
    const metrics = createMetrics()
    const app = await buildTestApp({ metrics })
    await postPlant(app, { id: 1, name: 'fern' })
    await postPlant(app, { id: 2, name: 'ivy' })
    const text = await metrics.exposition.metrics()
    expect(sampleValue(text, DURATION, requests('POST', '/plants', 200))).toBe(2)
    expect(sampleValue(text, 'http_server_request_duration_seconds_bucket', { ...requests('POST', '/plants', 200), le: '+Inf' })).toBe(2)
    expect(sampleValue(text, 'http_server_request_duration_seconds_bucket', { ...requests('POST', '/plants', 200), le: '10' })).toBe(2)
    expect(sampleValue(text, 'http_server_request_duration_seconds_sum', requests('POST', '/plants', 200))).toBeGreaterThan(0)
    expect(text).toContain('# TYPE http_server_request_duration_seconds histogram')
  })

  it('counts every kind of refusal: 400, 401, 409, 503 from the store, and 404 under one fixed route value', async () => {
    const metrics = createMetrics()
    const app = await buildTestApp({ metrics })
    await postPlant(app, { id: 1, name: 'fern' })
    await postPlant(app, { id: 1, name: 'ivy' })
    await postPlant(app, { id: 'x', name: 'ivy' })
    await postPlant(app, { id: 3, name: 'ivy' }, { 'content-type': 'application/json' })
    await app.inject({ method: 'GET', url: '/no/such/path-1234?q=5' })
    await app.inject({ method: 'DELETE', url: '/another-path' })
    const text = await metrics.exposition.metrics()
    expect(sampleValue(text, DURATION, requests('POST', '/plants', 409))).toBe(1)
    expect(sampleValue(text, DURATION, requests('POST', '/plants', 400))).toBe(1)
    expect(sampleValue(text, DURATION, requests('POST', '/plants', 401))).toBe(1)
    expect(sampleValue(text, DURATION, requests('GET', 'unmatched', 404))).toBe(1)
    expect(sampleValue(text, DURATION, requests('DELETE', 'unmatched', 404))).toBe(1)
    // Never the raw path: a label value is bounded.
    expect(text).not.toContain('path-1234')
    expect(text).not.toContain('another-path')
  })

  it('counts a request shed under pressure (503 from under-pressure, before auth)', async () => {
    const metrics = createMetrics()
    const app = await buildTestApp({ metrics, config: { MAX_RSS_ANON_BYTES: 1 } })
    await app.ready()
    await until(() => app.isUnderPressure(), 5000, 'pressure seen')
    expect((await postPlant(app, { id: 1, name: 'fern' })).statusCode).toBe(503)
    expect(sampleValue(await metrics.exposition.metrics(), DURATION, requests('POST', '/plants', 503))).toBe(1)
  })

  it('counts a bad URL (answered by frameworkErrors, outside the hooks) once, as unmatched', async () => {
    const metrics = createMetrics()
    const app = await buildTestApp({ metrics })
    const res = await app.inject({ method: 'GET', url: '/plants%' })
    expect(res.statusCode).toBe(400)
    expect(sampleValue(await metrics.exposition.metrics(), DURATION, requests('GET', 'unmatched', 400))).toBe(1)
  })

  it('counts an unmatched request under its method, one of the bounded set Node\'s parser accepts (http.METHODS)', async () => {
    const metrics = createMetrics()
    const app = await buildTestApp({ metrics })
    await app.inject({ method: 'PROPFIND', url: '/x' })
    expect(sampleValue(await metrics.exposition.metrics(), DURATION, requests('PROPFIND', 'unmatched', 404))).toBe(1)
  })

  it('does not count malformed HTTP: clientErrorHandler answers it before any request exists', async () => {
    const metrics = createMetrics()
    const app = await buildTestApp({ metrics })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as { port: number }
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'))
      let text = ''
      socket.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => resolve(text)).on('error', reject)
    })
    expect(reply).toMatch(/^HTTP\/1.1 400/)
    expect(await metrics.exposition.metrics()).not.toContain('http_response_status_code="400"')
  })

  it('is not served on the API port: /metrics there is a 404 Error record, with or without a token', async () => {
    const app = await buildTestApp({ metrics: createMetrics() })
    for (const headers of [{}, AUTH]) {
      const res = await app.inject({ method: 'GET', url: '/metrics', headers })
      expect(res.statusCode).toBe(404)
      expect(res.json()).toEqual({ error: 404, message: 'no route for GET /metrics' })
    }
  })
})

describe('store metrics', () => {
  it('counts inserts by outcome (created, same, conflict, error) and times each', async () => {
    const metrics = createMetrics()
    const app = await buildTestApp({ metrics })
    await postPlant(app, { id: 1, name: 'fern' })
    await postPlant(app, { id: 1, name: 'fern' })
    await postPlant(app, { id: 1, name: 'ivy' })
    await postPlant(app, { id: 2, name: 'ivy' })
    const text = await metrics.exposition.metrics()
    expect(sampleValue(text, 'plant_store_inserts_total', { outcome: 'created' })).toBe(2)
    expect(sampleValue(text, 'plant_store_inserts_total', { outcome: 'same' })).toBe(1)
    expect(sampleValue(text, 'plant_store_inserts_total', { outcome: 'conflict' })).toBe(1)
    expect(sampleValue(text, 'plant_store_inserts_total', { outcome: 'error' })).toBe(0)
    expect(sampleValue(text, 'plant_store_insert_duration_seconds_count')).toBe(4)
  })

  it('counts a failed insert as error, and the reply is still the 503 Error record', async () => {
    const metrics = createMetrics()
    const repository: PlantRepository = { insert: async () => { throw new StoreUnavailableError() }, ready: async () => {}, close: async () => {} }
    const app = await buildTestApp({ metrics, repository })
    const res = await postPlant(app, { id: 1, name: 'fern' })
    expect(res.statusCode).toBe(503)
    const text = await metrics.exposition.metrics()
    expect(sampleValue(text, 'plant_store_inserts_total', { outcome: 'error' })).toBe(1)
    expect(sampleValue(text, 'plant_store_insert_duration_seconds_count')).toBe(1)
  })

  it('exports the memory store\'s plants and capacity, read when scraped', async () => {
    const metrics = createMetrics()
    const app = await buildTestApp({ metrics, maxPlants: 50 })
    await postPlant(app, { id: 1, name: 'fern' })
    await postPlant(app, `{"id":${2n ** 60n},"name":"big"}`)
    const text = await metrics.exposition.metrics()
    expect(sampleValue(text, 'plant_store_memory_plants')).toBe(2)
    expect(sampleValue(text, 'plant_store_memory_capacity_plants')).toBe(50)
    // Not a store that commits in groups (its batch-size histogram stays at 0), nor one with a pool.
    expect(sampleValue(text, 'plant_store_group_commit_batch_size_count')).toBe(0)
    expect(text).not.toContain('plant_store_pool_')
  })
})

describe('process metrics', () => {
  it('exports prom-client\'s default process and Node metrics, and token reloads at 0 from the start', async () => {
    const metrics = createMetrics()
    const text = await metrics.exposition.metrics()
    for (const name of ['process_resident_memory_bytes', 'process_cpu_seconds_total', 'nodejs_eventloop_lag_p99_seconds',
      'nodejs_heap_size_used_bytes', 'nodejs_gc_duration_seconds']) {
      expect(text).toContain(`# TYPE ${name} `)
    }
    expect(sampleValue(text, 'plant_store_token_reloads_total', { result: 'ok' })).toBe(0)
    expect(sampleValue(text, 'plant_store_token_reloads_total', { result: 'refused' })).toBe(0)
    metrics.tokenReload(true)
    metrics.tokenReload(false)
    metrics.tokenReload(false)
    const after = await metrics.exposition.metrics()
    expect(sampleValue(after, 'plant_store_token_reloads_total', { result: 'ok' })).toBe(1)
    expect(sampleValue(after, 'plant_store_token_reloads_total', { result: 'refused' })).toBe(2)
  })

  it('keeps each app\'s metrics in its own registry: two apps in one process do not collide', async () => {
    const first = createMetrics()
    const second = createMetrics()
    await postPlant(await buildTestApp({ metrics: first }), { id: 1, name: 'fern' })
    await buildTestApp({ metrics: second })
    expect(sampleValue(await first.exposition.metrics(), DURATION, requests('POST', '/plants', 200))).toBe(1)
    expect(sampleValue(await second.exposition.metrics(), DURATION, requests('POST', '/plants', 200))).toBeUndefined()
  })
})
