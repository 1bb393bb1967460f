import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { findPostgresBinaries, startStandbyPair } from '../plants/postgres-standby.js'
import {
  alertsOf, nameOf, noPrometheus, post, requirePrometheus, rules, scrape, seen, sleep, startScraped, steadyTraffic, TOKEN,
  unhealthyRules, usePrometheus, waitForQuery, waitForAlerts
} from './alerts-prometheus.js'
import { SERVER } from './server-process.js'
import { freePort } from '../helpers.js'

// The shipped rules in a real Prometheus (test/e2e/alerts-prometheus.ts), one fault per scenario:
// each waits for the alerts it must set pending. Every expression of the file must return series at
// some point of the run: a renamed metric breaks this test, not the pager. The promtool unit tests
// pin the thresholds (test/deploy/prometheus-rules.test.ts); this one pins the names, labels and
// wiring. The healthy minute, where no alert may go pending, is test/e2e/alerts-healthy.test.ts.

const bin = findPostgresBinaries()
const noPostgres = process.env.TEST_DATABASE_URL === undefined
  ? 'TEST_DATABASE_URL is not set'
  : bin === undefined
    ? 'the PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) are not installed (apt-get install postgresql, or set PG_BIN)'
    : undefined
requirePrometheus()
if (noPostgres !== undefined) {
  if (process.env.REQUIRE_POSTGRES === '1') {
    describe('alerts against a real Prometheus, PostgreSQL store', () => {
      it('runs: REQUIRE_POSTGRES=1 turns a skip into a failure', () => { expect.fail(noPostgres) })
    })
  } else {
    console.warn(`alerts e2e with a stopped PostgreSQL skipped: ${noPostgres} (CI sets REQUIRE_POSTGRES=1)`)
  }
}

describe.skipIf(noPrometheus !== undefined)('the shipped alerts, in a real Prometheus scraping the built service: faults', () => {
  usePrometheus()

  it.skipIf(noPostgres !== undefined)('PostgreSQL stopped under steady creates: the store, readiness and error-budget alerts go pending within a ' +
    'minute', async () => {
    const pair = await startStandbyPair(bin as string)
    onTestFinished(() => pair.destroy())
    const server = await startScraped('store-down', { DATABASE_URL: pair.primary.url, DATABASE_STATEMENT_TIMEOUT_MS: '1000' })
    steadyTraffic(server.url, 50, 1)
    await waitForQuery('job_route_code:plant_store_http_requests:rate5m{namespace="store-down", http_route="/plants", ' +
      'http_response_status_code="200"} > 0', (result) => result.length === 1, 30000)
    expect(await alertsOf('store-down')).toEqual([])

    await pair.primary.stop('immediate')
    const stopped = Date.now()
    await waitForAlerts('store-down', ['PlantStoreErrorBudgetBurn', 'PlantStoreNotReady', 'PlantStoreStoreFailing'], 60000)
    expect(Date.now() - stopped).toBeLessThan(60000)
  }, 150000)

  it('the memory store filled to 95 % of MAX_PLANTS: the filling alert goes pending; filled up, its 507s set the store and error-budget alerts', async () => {
    const server = await startScraped('filling', { MAX_PLANTS: '100' })
    for (let id = 1; id <= 95; id++) expect(await post(server.url, id)).toBe(200)
    await waitForAlerts('filling', ['PlantStoreMemoryStoreFilling'], 30000)
    // The alert may go pending on a scrape taken before the 95th create (at 0.91, say): wait for the one after it.
    const fill = await waitForQuery('instance_bound:plant_store_memory_fill:ratio{namespace="filling"}',
      (result) => result.some((sample) => Number(sample.value[1]) >= 0.95), 30000)
    expect(Object.fromEntries(fill.map((sample) => [sample.metric.bound, Number(sample.value[1])]))).toEqual({ MAX_PLANTS: 0.95 })
    expect(await alertsOf('filling')).toEqual(['PlantStoreMemoryStoreFilling'])

    const statuses = steadyTraffic(server.url, 50, 96)
    await waitForAlerts('filling', ['PlantStoreErrorBudgetBurn', 'PlantStoreMemoryStoreFilling', 'PlantStoreStoreFailing'], 30000)
    expect(statuses.get(507)).toBeGreaterThan(0)
  }, 90000)

  it('a log reader that stops reading: the dropped-lines alert goes pending', async () => {
    // stdout a pipe nobody reads: it fills (64 KiB), then the service's LOG_BUFFER_MAX_BYTES, then lines drop.
    const [port, metricsPort] = [await freePort(), await freePort()]
    const child = spawn(process.execPath, [SERVER], {
      env: {
        PATH: process.env.PATH,
        HOST: '127.0.0.1',
        PORT: String(port),
        METRICS_PORT: String(metricsPort),
        LOG_LEVEL: 'info',
        API_TOKENS: TOKEN,
        LOG_BUFFER_MAX_BYTES: '65536'
      },
      stdio: ['ignore', 'pipe', 'ignore']
    })
    onTestFinished(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
    const url = `http://127.0.0.1:${port}`
    const deadline = Date.now() + 15000
    while (!(await fetch(`${url}/livez`).then((response) => response.ok, () => false))) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error('the server did not start')
      await sleep(100)
    }
    scrape('log-reader', `127.0.0.1:${metricsPort}`)
    let id = 1
    let writing = true
    const writers = Array.from({ length: 8 }, async () => {
      while (writing) await post(url, id++).catch(() => 0)
    })
    onTestFinished(async () => {
      writing = false
      await Promise.all(writers)
    })
    await waitForAlerts('log-reader', ['PlantStoreLogLinesDropped'], 60000)
  }, 90000)

  it('a reload of API_TOKENS_FILE refused: the token alert goes pending', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-alerts-tokens-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'tokens')
    writeFileSync(file, `${TOKEN}\n`)
    const server = await startScraped('tokens', { API_TOKENS_FILE: file })
    expect(await alertsOf('tokens')).toEqual([])
    writeFileSync(file, '')
    server.child.kill('SIGHUP')
    await server.waitForLine((line) => line.includes('tokens not reloaded'))
    await waitForAlerts('tokens', ['PlantStoreTokenReloadRefused'], 30000)
    expect(await post(server.url, 1)).toBe(200)
  }, 60000)

  it('an overloaded process: the shedding alert goes pending, and the readiness alert (its /readyz is shed too)', async () => {
    // A heap limit every process is over: every request but /livez is shed with 503.
    const server = await startScraped('overloaded', { MAX_HEAP_USED_BYTES: String(1024 * 1024) })
    const statuses = steadyTraffic(server.url, 50, 1)
    await waitForAlerts('overloaded', ['PlantStoreNotReady', 'PlantStoreShedding'], 30000)
    expect(statuses.get(503)).toBeGreaterThan(0)
  }, 60000)

  it('a target whose port nothing listens on: the target-down alert goes pending', async () => {
    scrape('down', `127.0.0.1:${await freePort()}`)
    await waitForAlerts('down', ['PlantStoreTargetDown'], 30000)
  }, 60000)

  it('every expression of the rules returned series against the live service, and every rule evaluates without an error', async () => {
    const missing = rules.map(nameOf).filter((name) => !seen.has(name))
    expect(missing).toEqual([])
    expect(await unhealthyRules()).toEqual([])
  })
})
