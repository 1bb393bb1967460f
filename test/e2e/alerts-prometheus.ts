import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { startServer, type ServerProcess } from './server-process.js'
import { freePort, postOverHttp } from '../helpers.js'

// The shipped rules (deploy/prometheus/plant-store.rules.yaml) in a real Prometheus (Debian's
// /usr/bin/prometheus, a temporary configuration, 1 s scrape and evaluation) scraping the built
// service: each scenario runs its own service as a target of the job, told apart by a `namespace`
// label of its own, and waits (polling Prometheus' HTTP API) for the alerts it must set pending, or
// watches that none does. Each test file that imports this module runs its own Prometheus (Vitest
// loads the module afresh for every file), so that the files run side by side.

const RULES_FILE = fileURLToPath(new URL('../../deploy/prometheus/plant-store.rules.yaml', import.meta.url))
const PROMETHEUS = process.env.PROMETHEUS ?? '/usr/bin/prometheus'
export const TOKEN = 'alerts-e2e-token'

export const noPrometheus = existsSync(PROMETHEUS) && spawnSync(PROMETHEUS, ['--version']).status === 0
  ? undefined
  : `Prometheus is not installed at ${PROMETHEUS} (Debian package prometheus, or set PROMETHEUS)`

/** Fails the file where REQUIRE_PROMTOOL=1 asks for Prometheus and it is missing; says why it skips otherwise. */
export function requirePrometheus (): void {
  if (noPrometheus === undefined) return
  if (process.env.REQUIRE_PROMTOOL === '1') {
    describe('alerts against a real Prometheus', () => {
      it('runs: REQUIRE_PROMTOOL=1 (promtool and prometheus are one Debian package) turns a skip into a failure', () => { expect.fail(noPrometheus) })
    })
  } else {
    console.warn(`alerts e2e skipped: ${noPrometheus} (CI installs it and sets REQUIRE_PROMTOOL=1)`)
  }
}

export interface Rule { record?: string, alert?: string, expr: string }
export const rules = (parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((group) => group.rules)
export const nameOf = (rule: Rule): string => rule.alert ?? rule.record ?? ''

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface RulesReply { data: { groups: { rules: { name: string, health: string, lastError?: string }[] }[] } }

interface Sample { metric: Record<string, string>, value: [number, string] }

/** Prometheus, its file of targets (file_sd), and the rules' expressions seen returning series. */
let prometheus: { url: string, child: ChildProcess, dir: string, targets: Map<string, { targets: string[], labels: Record<string, string> }> } | undefined
export const seen = new Set<string>()

/** Starts Prometheus with the shipped rules before the enclosing describe's tests, and stops it after them. */
export function usePrometheus (): void {
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
}

/** The rules Prometheus reports unhealthy (an evaluation that failed), with their last error. */
export async function unhealthyRules (): Promise<string[]> {
  const groups = await fetch(`${prometheus?.url ?? ''}/api/v1/rules`).then(async (response) => await response.json() as RulesReply)
  return groups.data.groups.flatMap((group) => group.rules).filter((rule) => rule.health !== 'ok')
    .map((rule) => `${rule.name}: ${rule.health} ${rule.lastError ?? ''}`)
}

export async function query (promql: string): Promise<Sample[]> {
  const response = await fetch(`${prometheus?.url ?? ''}/api/v1/query?query=${encodeURIComponent(promql)}`)
  const body = await response.json() as { status: string, error?: string, data?: { resultType: string, result: Sample[] } }
  if (body.status !== 'success' || body.data === undefined) throw new Error(`${promql}: ${body.error ?? response.status}`)
  return body.data.result
}

/**
 * Polls `promql` until `done` holds for its result; fails after `timeoutMs` with the last result (helpers.ts's
 * `until` would fail without it), every 500 ms: Prometheus evaluates once a second.
 */
export async function waitForQuery (promql: string, done: (result: Sample[]) => boolean, timeoutMs: number): Promise<Sample[]> {
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
export async function sampleExpressions (): Promise<void> {
  await Promise.all(rules.map(async (rule) => {
    if ((await query(rule.expr)).length > 0) seen.add(nameOf(rule))
  }))
}

/** The alerts pending or firing for one scenario's targets, by name. */
export async function alertsOf (namespace: string): Promise<string[]> {
  return (await query(`ALERTS{namespace="${namespace}"}`)).map((sample) => sample.metric.alertname ?? '').sort()
}

/** Waits until each of `names` is pending (or firing) for `namespace`; then its expression, queried, returns series. */
export async function waitForAlerts (namespace: string, names: string[], timeoutMs: number): Promise<void> {
  const pending = (result: Sample[]): boolean => names.every((name) => result.some((sample) => sample.metric.alertname === name))
  await waitForQuery(`ALERTS{namespace="${namespace}"}`, pending, timeoutMs)
  await sampleExpressions()
  for (const name of names) expect([...seen], `the expression of ${name}, queried`).toContain(name)
}

/** Adds a target to the scrape job (file_sd: Prometheus reads the file again when it changes); removed when the test ends. */
export function scrape (namespace: string, target: string): void {
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
export async function startScraped (namespace: string, env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServer({ ...(env.API_TOKENS_FILE === undefined ? { API_TOKENS: TOKEN } : {}), METRICS_PORT: '0', ...env })
  const line = await server.waitForLine((text) => text.includes('Metrics listening at'))
  scrape(namespace, new URL((JSON.parse(line) as { url: string }).url).host)
  await waitForQuery(`up{namespace="${namespace}"} == 1`, (result) => result.length === 1, 30000)
  return server
}

export const post = (url: string, id: number): Promise<number> => postOverHttp(url, TOKEN, { id, name: 'fern' }).then(async (response) => {
  await response.arrayBuffer()
  return response.status
})

/**
 * Steady traffic until the test ends: a create of a new plant every `createEveryMs` from one client
 * (a pause of 50 ms after a failure), and a GET /readyz every second, as a kubelet probes. Counts statuses.
 */
export function steadyTraffic (url: string, createEveryMs: number, firstId: number): Map<number, number> {
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
