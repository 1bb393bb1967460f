import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { describe, expect, it, onTestFinished } from 'vitest'
import { listenMetrics } from '../../src/observability/metrics-listener.js'
import { createSqlitePlantRepository } from '../../src/plants/sqlite-plant-repository.js'
import { createMetrics, type Metrics } from '../../src/observability/metrics.js'
import { buildTestApp, postPlant } from '../helpers.js'

const silent = pino({ level: 'silent' })

async function listen (metrics: Metrics = createMetrics()) {
  const listener = await listenMetrics(metrics.exposition, '127.0.0.1', 0, silent)
  onTestFinished(() => listener.close())
  return listener
}

interface Reply { status: number, headers: Record<string, string | string[] | undefined>, body: string }

function get (url: string, method = 'GET', agent?: Agent): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, ...(agent === undefined ? {} : { agent }) }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { body += chunk }).on('end', () => resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        body
      }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('metrics listener (METRICS_PORT)', () => {
  it('answers GET /metrics in the Prometheus text format, without a token', async () => {
    const metrics = createMetrics()
    const app = await buildTestApp({ metrics })
    await postPlant(app, { id: 1, name: 'fern' })
    const { url } = await listen(metrics)
    const res = await get(url)
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8')
    expect(res.body).toContain('http_server_request_duration_seconds_count{http_request_method="POST",http_route="/plants",http_response_status_code="200"} 1')
    expect(res.body).toContain('plant_store_inserts_total{outcome="created"} 1')
  })

  it('answers anything else with a 404 Error record: another path, another method, a query on another path', async () => {
    const { url } = await listen()
    const base = new URL(url)
    for (const [path, method] of [['/', 'GET'], ['/metrics', 'POST'], ['/metrics/x', 'GET'], ['/plants?x=1', 'GET']] as const) {
      const res = await get(new URL(path, base).href, method)
      expect(res.status).toBe(404)
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
      expect(JSON.parse(res.body)).toEqual({ error: 404, message: `no route for ${method} ${path.split('?')[0]}` })
    }
    // A query string on /metrics is ignored, as scrapers may add one.
    expect((await get(`${url}?name[]=x`)).status).toBe(200)
  })

  it('closes at once even while a scraper keeps an idle keep-alive connection', async () => {
    const listener = await listenMetrics(createMetrics().exposition, '127.0.0.1', 0, silent)
    const agent = new Agent({ keepAlive: true })
    onTestFinished(() => agent.destroy())
    expect((await get(listener.url, 'GET', agent)).status).toBe(200)
    const started = Date.now()
    await listener.close()
    expect(Date.now() - started).toBeLessThan(2000)
  })

  it('refuses to start on a port in use, naming METRICS_PORT', async () => {
    const busy = createServer()
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
    onTestFinished(() => new Promise<void>((resolve) => busy.close(() => resolve())))
    const port = (busy.address() as { port: number }).port
    await expect(listenMetrics(createMetrics().exposition, '127.0.0.1', port, silent))
      .rejects.toThrow(`METRICS_PORT: cannot listen on 127.0.0.1:${port}: EADDRINUSE`)
  })
})

const promtool = spawnSync('promtool', ['--version']).status === 0
const requirePromtool = process.env.REQUIRE_PROMTOOL === '1'
if (!promtool && !requirePromtool) {
  console.warn('promtool check skipped: promtool is not installed (Debian package prometheus; CI installs it and sets REQUIRE_PROMTOOL=1)')
}

describe('promtool check metrics', () => {
  it.skipIf(!promtool && !requirePromtool)('reports nothing on a real scrape after traffic of every kind (memory and SQLite stores)', async () => {
    if (!promtool) expect.fail('REQUIRE_PROMTOOL=1 but promtool is not installed: the scrape would not be checked')
    const metrics = createMetrics()
    const app = await buildTestApp({ metrics })
    await postPlant(app, { id: 1, name: 'fern' })
    await postPlant(app, { id: 1, name: 'ivy' })
    await postPlant(app, { id: 'x', name: 'ivy' }, { 'content-type': 'application/json' })
    await app.inject({ method: 'PROPFIND', url: '/x' })
    await app.inject({ method: 'GET', url: '/plants%' })
    metrics.tokenReload(true)
    // A store that commits in groups adds its batch-size histogram.
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-metrics-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const sqliteMetrics = createMetrics()
    const sqlite = await buildTestApp({ metrics: sqliteMetrics, repository: createSqlitePlantRepository(join(dir, 'plants.db')) })
    await Promise.all([1, 2, 3].map((id) => postPlant(sqlite, { id, name: 'fern' })))

    for (const registry of [metrics.exposition, sqliteMetrics.exposition]) {
      const { url } = await listenMetrics(registry, '127.0.0.1', 0, silent).then((listener) => {
        onTestFinished(() => listener.close())
        return listener
      })
      const scrape = (await get(url)).body
      const check = spawnSync('promtool', ['check', 'metrics'], { input: scrape, encoding: 'utf8' })
      expect({ status: check.status, output: check.stdout + check.stderr }).toEqual({ status: 0, output: '' })
    }
  })
})
