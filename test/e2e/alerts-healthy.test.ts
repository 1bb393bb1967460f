import { describe, expect, it } from 'vitest'
import {
  alertsOf, nameOf, noPrometheus, requirePrometheus, rules, sampleExpressions, seen, sleep, startScraped, steadyTraffic, unhealthyRules,
  usePrometheus, waitForQuery
} from './alerts-prometheus.js'

// The healthy minute of the shipped alerts in a real Prometheus (test/e2e/alerts-prometheus.ts):
// its own file and its own Prometheus, so that it runs beside the fault scenarios of
// test/e2e/alerts.test.ts instead of after them.

requirePrometheus()

describe.skipIf(noPrometheus !== undefined)('the shipped alerts, in a real Prometheus scraping the built service: a healthy service', () => {
  usePrometheus()

  it('steady creates on a healthy memory store: no alert pending for a minute, while every recording rule returns series', async () => {
    // A shared machine can stall the event loop for other processes' sake: shedding because of them
    // is not what this scenario is about (PlantStoreShedding has a scenario of its own).
    const server = await startScraped('healthy', { MAX_EVENT_LOOP_DELAY_MS: '2000' })
    const statuses = steadyTraffic(server.url, 50, 1)
    await waitForQuery('job_route_code:plant_store_http_requests:rate5m{namespace="healthy", http_route="/plants", http_response_status_code="200"} > 0',
      (result) => result.length === 1, 30000)
    const deadline = Date.now() + 60000
    while (Date.now() < deadline) {
      expect(await alertsOf('healthy')).toEqual([])
      await sampleExpressions()
      await sleep(1000)
    }
    expect(await alertsOf('healthy')).toEqual([])
    expect([...statuses.keys()]).toEqual([200])
    for (const rule of rules.filter((candidate) => candidate.record !== undefined)) {
      expect([...seen],
      `the recording rule ${nameOf(rule)}`).toContain(nameOf(rule))
    }
  }, 120000)

  it('every rule evaluates without an error against the healthy service', async () => {
    expect(await unhealthyRules()).toEqual([])
  })
})
