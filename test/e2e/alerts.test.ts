import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { findPostgresBinaries, startStandbyPair } from '../plants/postgres-standby.js'
import { freePort } from '../plants/postgres-test-schemas.js'
import { SERVER, startServer, type ServerProcess } from './server-process.js'

// The shipped rules (deploy/prometheus/plant-store.rules.yaml) in a real Prometheus (Debian's
// /usr/bin/prometheus, a temporary configuration, 1 s scrape and evaluation) scraping the built
// service: each scenario runs its own service as a target of the job, told apart by a `namespace`
// label of its own, and waits (polling Prometheus' HTTP API) for the alerts it must set pending, or
// watches that none does. Every expression of the file must return series at some point of the run:
// a renamed metric breaks this test, not the pager. The promtool unit tests pin the thresholds
// (test/deploy/prometheus-rules.test.ts); this one pins the names, labels and wiring.

const RULES_FILE = fileURLToPath(new URL('../../deploy/prometheus/plant-store.rules.yaml', import.meta.url))
const PROMETHEUS = process.env.PROMETHEUS ?? '/usr/bin/prometheus'
const TOKEN = 'alerts-e2e-token'

const noPrometheus = existsSync(PROMETHEUS) && spawnSync(PROMETHEUS, ['--version']).status === 0
  ? undefined
  : `Prometheus is not installed at ${PROMETHEUS} (Debian package prometheus, or set PROMETHEUS)`
const bin = findPostgresBinaries()
const noPostgres = process.env.TEST_DATABASE_URL === undefined
  ? 'TEST_DATABASE_URL is not set'
  : bin === undefined ? 'the PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) are not installed (apt-get install postgresql, or set PG_BIN)' : undefined
if (noPrometheus !== undefined) {
  if (process.env.REQUIRE_PROMTOOL === '1') {
    describe('alerts against a real Prometheus', () => {
      it('runs: REQUIRE_PROMTOOL=1 (promtool and prometheus are one Debian package) turns a skip into a failure', () => { expect.fail(noPrometheus) })
    })
  } else {
    console.warn(`alerts e2e skipped: ${noPrometheus} (CI installs it and sets REQUIRE_PROMTOOL=1)`)
  }
}
if (noPostgres !== undefined) {
  if (process.env.REQUIRE_POSTGRES === '1') {
    describe('alerts against a real Prometheus, PostgreSQL store', () => {
      it('runs: REQUIRE_POSTGRES=1 turns a skip into a failure', () => { expect.fail(noPostgres) })
    })
  } else {
    console.warn(`alerts e2e with a stopped PostgreSQL skipped: ${noPostgres} (CI sets REQUIRE_POSTGRES=1)`)
  }
}

interface Rule { record?: string, alert?: string, expr: string }
const rules = (parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((group) => group.rules)
const nameOf = (rule: Rule): string => rule.alert ?? rule.record ?? ''

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface RulesReply { data: { groups: { rules: { name: string, health: string, lastError?: string }[] }[] } }

interface Sample { metric: Record<string, string>, value: [number, string] }

/** Prometheus, its file of targets (file_sd), and the rules' expressions seen returning series. */
let prometheus: { url: string, child: ChildProcess, dir: string, targets: Map<string, { targets: string[], labels: Record<string, string> }> } | undefined
const seen = new Set<string>()

async function query (promql: string): Promise<Sample[]> {
  const response = await fetch(`${prometheus?.url ?? ''}/api/v1/query?query=${encodeURIComponent(promql)}`)
  const body = await response.json() as { status: string, error?: string, data?: { resultType: string, result: Sample[] } }
  if (body.status !== 'success' || body.data === undefined) throw new Error(`${promql}: ${body.error ?? response.status}`)
  return body.data.result
}

/** Polls `promql` until `done` holds for its result; fails after `timeoutMs` with the last result. */
async function waitFor (promql: string, done: (result: Sample[]) => boolean, timeoutMs: number): Promise<Sample[]> {
  const deadline = Date.now() + timeoutMs
  let last: Sample[] = []
  for (;;) {
    last = await query(promql)
    if (done(last)) return last
    if (Date.now() > deadline) throw new Error(`${promql}: not as expected within ${timeoutMs} ms; last result: ${JSON.stringify(last)}`)
    await sleep(500)
  }
}

/** Queries every expression of the rules now, and notes those that returned series. */
async function sampleExpressions (): Promise<void> {
  await Promise.all(rules.map(async (rule) => {
    if ((await query(rule.expr)).length > 0) seen.add(nameOf(rule))
  }))
}

/** The alerts pending or firing for one scenario's targets, by name. */
async function alertsOf (namespace: string): Promise<string[]> {
  return (await query(`ALERTS{namespace="${namespace}"}`)).map((sample) => sample.metric.alertname ?? '').sort()
}

/** Waits until each of `names` is pending (or firing) for `namespace`; then its expression, queried, returns series. */
async function waitForAlerts (namespace: string, names: string[], timeoutMs: number): Promise<void> {
  await waitFor(`ALERTS{namespace="${namespace}"}`, (result) => names.every((name) => result.some((sample) => sample.metric.alertname === name)), timeoutMs)
  await sampleExpressions()
  for (const name of names) expect([...seen], `the expression of ${name}, queried`).toContain(name)
}

/** Adds a target to the scrape job (file_sd: Prometheus reads the file again when it changes); removed when the test ends. */
function scrape (namespace: string, target: string): void {
  if (prometheus === undefined) throw new Error('Prometheus is not running')
  const targets = prometheus.targets
  const write = (): void => {
    const file = join(prometheus?.dir ?? '', 'targets.json')
    writeFileSync(`${file}.tmp`, JSON.stringify([...targets.values()]))
    renameSync(`${file}.tmp`, file)
  }
  targets.set(namespace, { targets: [target], labels: { namespace } })
  write()
  onTestFinished(() => {
    targets.delete(namespace)
    write()
  })
}

/** The built service with metrics on, scraped as `namespace` once it listens. */
async function startScraped (namespace: string, env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServer({ ...(env.API_TOKENS_FILE === undefined ? { API_TOKENS: TOKEN } : {}), METRICS_PORT: '0', ...env })
  const line = await server.waitForLine((text) => text.includes('Metrics listening at'))
  scrape(namespace, new URL((JSON.parse(line) as { url: string }).url).host)
  await waitFor(`up{namespace="${namespace}"} == 1`, (result) => result.length === 1, 30000)
  return server
}

const post = (url: string, id: number): Promise<number> => fetch(`${url}/plants`, {
  method: 'POST',
  headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
  body: JSON.stringify({ id, name: 'fern' })
}).then(async (response) => {
  await response.arrayBuffer()
  return response.status
})

/**
 * Steady traffic until the test ends: a create of a new plant every `createEveryMs` from one client
 * (a pause of 50 ms after a failure), and a GET /readyz every second, as a kubelet probes. Counts statuses.
 */
function steadyTraffic (url: string, createEveryMs: number, firstId: number): Map<number, number> {
  const statuses = new Map<number, number>()
  let stopped = false
  let id = firstId
  const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1)
  const creates = (async () => {
    while (!stopped) {
      const status = await post(url, id++).catch(() => 0)
      count(status)
      await sleep(status === 200 ? createEveryMs : 50)
    }
  })()
  const probes = (async () => {
    while (!stopped) {
      await fetch(`${url}/readyz`).then((response) => response.arrayBuffer()).catch(() => {})
      await sleep(1000)
    }
  })()
  onTestFinished(async () => {
    stopped = true
    await Promise.all([creates, probes])
  })
  return statuses
}

describe.skipIf(noPrometheus !== undefined)('the shipped alerts, in a real Prometheus scraping the built service', () => {
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-prometheus-'))
    const port = await freePort()
    writeFileSync(join(dir, 'targets.json'), '[]')
    writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify({
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: [RULES_FILE],
      scrape_configs: [{ job_name: 'plant-store', file_sd_configs: [{ files: [join(dir, 'targets.json')], refresh_interval: '1s' }] }]
    }))
    const child = spawn(PROMETHEUS, [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn'
    ], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    prometheus = { url: `http://127.0.0.1:${port}`, child, dir, targets: new Map() }
    const deadline = Date.now() + 30000
    while (!(await fetch(`${prometheus.url}/-/ready`).then((response) => response.ok, () => false))) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`Prometheus did not start: ${stderr}`)
      await sleep(200)
    }
    // Every rule of the file loaded.
    const groups = await fetch(`${prometheus.url}/api/v1/rules`).then(async (response) => await response.json() as RulesReply)
    expect(groups.data.groups.flatMap((group) => group.rules.map((rule) => rule.name)).sort()).toEqual(rules.map(nameOf).sort())
  }, 60000)

  afterAll(async () => {
    if (prometheus === undefined) return
    const { child, dir } = prometheus
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  }, 30000)

  it('steady creates on a healthy memory store: no alert pending for a minute, while every recording rule returns series', async () => {
    // A shared machine can stall the event loop for other processes' sake: shedding because of them
    // is not what this scenario is about (PlantStoreShedding has a scenario of its own below).
    const server = await startScraped('healthy', { MAX_EVENT_LOOP_DELAY_MS: '2000' })
    const statuses = steadyTraffic(server.url, 50, 1)
    await waitFor('job_route_code:plant_store_http_requests:rate5m{namespace="healthy", http_route="/plants", http_response_status_code="200"} > 0', (result) => result.length === 1, 30000)
    const deadline = Date.now() + 60000
    while (Date.now() < deadline) {
      expect(await alertsOf('healthy')).toEqual([])
      await sampleExpressions()
      await sleep(1000)
    }
    expect(await alertsOf('healthy')).toEqual([])
    expect([...statuses.keys()]).toEqual([200])
    for (const rule of rules.filter((candidate) => candidate.record !== undefined)) expect([...seen], `the recording rule ${nameOf(rule)}`).toContain(nameOf(rule))
  }, 120000)

  it.skipIf(noPostgres !== undefined)('PostgreSQL stopped under steady creates: the store, readiness and error-budget alerts go pending within a minute', async () => {
    const pair = await startStandbyPair(bin as string)
    onTestFinished(() => pair.destroy())
    const server = await startScraped('store-down', { DATABASE_URL: pair.primary.url, DATABASE_STATEMENT_TIMEOUT_MS: '1000' })
    steadyTraffic(server.url, 50, 1)
    await waitFor('job_route_code:plant_store_http_requests:rate5m{namespace="store-down", http_route="/plants", http_response_status_code="200"} > 0', (result) => result.length === 1, 30000)
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
    const fill = await query('instance_bound:plant_store_memory_fill:ratio{namespace="filling"}')
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
      env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), METRICS_PORT: String(metricsPort), LOG_LEVEL: 'info', API_TOKENS: TOKEN, LOG_BUFFER_MAX_BYTES: '65536' },
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
    const groups = await fetch(`${prometheus?.url ?? ''}/api/v1/rules`).then(async (response) => await response.json() as RulesReply)
    const unhealthy = groups.data.groups.flatMap((group) => group.rules).filter((rule) => rule.health !== 'ok')
    expect(unhealthy.map((rule) => `${rule.name}: ${rule.health} ${rule.lastError ?? ''}`)).toEqual([])
  })
})
