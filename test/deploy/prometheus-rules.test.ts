import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { describe, expect, it } from 'vitest'
import { PROMETHEUS_RULE_FILE, prometheusRuleText, REGENERATE, RULES_FILE } from '../../scripts/prometheus-rule.mjs'
import { docBlock } from '../docs/blocks.js'
import { anchors } from '../docs/doc-checks.js'

// The rules that ship with the service (deploy/prometheus/plant-store.rules.yaml): valid for
// promtool, each alert pinned both ways by its unit tests (plant-store.rules.test.yaml), complete
// for an on-call engineer (for, severity, summary, a runbook that exists), and the same rules in the
// Kubernetes folder's PrometheusRule. Against a real Prometheus and the built service:
// test/e2e/alerts.test.ts.
const root = fileURLToPath(new URL('../../', import.meta.url))
const UNIT_TESTS = fileURLToPath(new URL('plant-store.rules.test.yaml', import.meta.url))

interface Rule { record?: string, alert?: string, expr: string, for?: string, labels?: Record<string, string>, annotations?: Record<string, string> }
interface Groups { groups: { name: string, rules: Rule[] }[] }
interface UnitTests { rule_files: string[], tests: { name: string, alert_rule_test?: { alertname: string, exp_alerts: unknown[] }[] }[] }

const rulesText = readFileSync(RULES_FILE, 'utf8')
const rules = (parse(rulesText) as Groups).groups.flatMap((group) => group.rules)
const alerts = rules.filter((rule) => rule.alert !== undefined)

const promtool = spawnSync('promtool', ['--version']).status === 0
const requirePromtool = process.env.REQUIRE_PROMTOOL === '1'
if (!promtool && !requirePromtool) {
  console.warn('promtool rules checks skipped: promtool is not installed (Debian package prometheus; CI installs it and sets REQUIRE_PROMTOOL=1)')
}

describe('promtool on the shipped rules', () => {
  it.skipIf(!promtool && !requirePromtool)('promtool check rules: valid, nothing to report', () => {
    if (!promtool) expect.fail('REQUIRE_PROMTOOL=1 but promtool is not installed: the rules would not be checked')
    const check = spawnSync('promtool', ['check', 'rules', RULES_FILE], { encoding: 'utf8' })
    expect({ status: check.status, stderr: check.stderr }).toEqual({ status: 0, stderr: '' })
    expect(check.stdout).toContain(`SUCCESS: ${rules.length} rules found`)
  })

  it.skipIf(!promtool && !requirePromtool)('promtool test rules: every unit test passes', () => {
    if (!promtool) expect.fail('REQUIRE_PROMTOOL=1 but promtool is not installed: the rules would not be tested')
    const run = spawnSync('promtool', ['test', 'rules', UNIT_TESTS], { encoding: 'utf8' })
    expect({ status: run.status, output: run.stdout + run.stderr }).toEqual({ status: 0, output: expect.stringContaining('SUCCESS') as unknown })
  })
})

describe('docs/production.md, Prometheus without the Operator', () => {
  const config = docBlock('docs/production.md', 'prometheus-config')

  it('scrapes the job the rules select', () => {
    const jobs = (parse(config) as { scrape_configs: { job_name: string }[] }).scrape_configs.map((scrape) => scrape.job_name)
    expect(jobs).toEqual([...new Set([...rulesText.matchAll(/job="([^"]*)"/g)].map((match) => match[1]))])
  })

  it.skipIf(!promtool && !requirePromtool)('promtool check config: the configuration and the rules file beside it are valid', () => {
    if (!promtool) expect.fail('REQUIRE_PROMTOOL=1 but promtool is not installed: the configuration would not be checked')
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-prometheus-'))
    try {
      writeFileSync(join(dir, 'prometheus.yml'), config)
      copyFileSync(RULES_FILE, join(dir, 'plant-store.rules.yaml'))
      const check = spawnSync('promtool', ['check', 'config', join(dir, 'prometheus.yml')], { encoding: 'utf8' })
      expect({ status: check.status, stderr: check.stderr }).toEqual({ status: 0, stderr: '' })
      expect(check.stdout).toContain(`SUCCESS: ${rules.length} rules found`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('the shipped rules', () => {
  it('alert on each signal the on-call needs', () => {
    expect(alerts.map((rule) => rule.alert).sort()).toEqual([
      'PlantStoreErrorBudgetBurn', 'PlantStoreLogLinesDropped', 'PlantStoreMemoryStoreFilling', 'PlantStoreNotReady',
      'PlantStoreShedding', 'PlantStoreStoreFailing', 'PlantStoreTargetDown', 'PlantStoreTokenReloadRefused'
    ])
    expect(rules.filter((rule) => rule.record !== undefined).length).toBeGreaterThan(0)
  })

  it('give every alert a for, a severity, a summary, a description and a runbook_url to its own heading in docs/observability.md', () => {
    const headings = anchors(readFileSync(join(root, 'docs', 'observability.md'), 'utf8'))
    for (const rule of alerts) {
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/)
      expect(['critical', 'warning'], rule.alert).toContain(rule.labels?.severity)
      expect(rule.annotations?.summary, rule.alert).toMatch(/\w/)
      expect(rule.annotations?.description, rule.alert).toMatch(/\w/)
      const anchor = rule.alert?.toLowerCase() ?? ''
      expect(rule.annotations?.runbook_url, rule.alert).toBe(`docs/observability.md#${anchor}`)
      expect(headings.has(anchor), `docs/observability.md has no heading ${rule.alert ?? ''}`).toBe(true)
    }
  })

  it('select the service\'s own scrape job in every selector, and read only series recorded in the file besides', () => {
    const recorded = new Set(rules.flatMap((rule) => rule.record ?? []))
    for (const rule of rules) {
      const selectors = [...rule.expr.matchAll(/([a-z_]+)\{([^}]*)\}/g)]
      expect(selectors.length + [...rule.expr.matchAll(/[a-z_]+:[a-z0-9_]+:[a-z0-9_]+/g)].length, rule.alert ?? rule.record).toBeGreaterThan(0)
      for (const [selector, , labels] of selectors) expect(labels, selector).toContain('job="plant-store"')
      for (const [name] of rule.expr.matchAll(/[a-z_]+:[a-z0-9_]+:[a-z0-9_]+/g)) expect(recorded, name).toContain(name)
    }
  })

  it('are unit-tested both ways: for each alert, a case that fires it and a case that must not', () => {
    const unitTests = parse(readFileSync(UNIT_TESTS, 'utf8')) as UnitTests
    expect(unitTests.rule_files.map((file) => join(root, 'test', 'deploy', file))).toEqual([RULES_FILE])
    const checks = unitTests.tests.flatMap((test) => test.alert_rule_test ?? [])
    for (const rule of alerts) {
      const mine = checks.filter((check) => check.alertname === rule.alert)
      expect(mine.some((check) => check.exp_alerts.length > 0), `${rule.alert ?? ''} fires in a case`).toBe(true)
      expect(mine.some((check) => check.exp_alerts.length === 0), `${rule.alert ?? ''} stays silent in a case`).toBe(true)
    }
  })
})

describe('deploy/kubernetes/monitoring/prometheusrule.yaml', () => {
  it('is the PrometheusRule made from the rules file', () => {
    expect(readFileSync(PROMETHEUS_RULE_FILE, 'utf8'), `stale: run \`${REGENERATE}\` and commit it`).toBe(prometheusRuleText(rulesText))
  })

  it('holds the same groups as the rules file, for the Prometheus Operator', () => {
    const rule = parse(readFileSync(PROMETHEUS_RULE_FILE, 'utf8')) as { apiVersion: string, kind: string, metadata: { name: string }, spec: Groups }
    expect(rule).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: { name: 'plant-store' } })
    expect(rule.spec).toEqual(parse(rulesText))
  })

  it('the generator refuses a file without groups', () => {
    expect(() => prometheusRuleText('# nothing\n')).toThrow('no top-level groups:')
  })
})
