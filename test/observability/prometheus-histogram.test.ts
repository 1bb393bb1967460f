import fc from 'fast-check'
import { Histogram, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { prometheusHistogram } from '../../src/observability/prometheus-histogram.js'
import { DURATION_BUCKETS } from '../../src/observability/metrics.js'

const LABELS = ['method', 'route', 'status'] as const

/** prom-client's own text for the same observations, the oracle of the hand-counted histogram. */
async function library (help: string, labelled: boolean, observations: Array<[string[], number]>) {
  const registry = new Registry()
  const histogram = new Histogram({
    name: 'h_seconds', help, buckets: DURATION_BUCKETS, labelNames: labelled ? LABELS : [], registers: [registry]
  })
  for (const [values, value] of observations) {
    if (labelled) histogram.labels(...values).observe(value)
    else histogram.observe(value)
  }
  return registry.getSingleMetricAsString('h_seconds')
}

function counted (help: string, labelled: boolean, observations: Array<[string[], number]>) {
  const histogram = prometheusHistogram('h_seconds', help, DURATION_BUCKETS)
  const series = new Map<string, ReturnType<typeof histogram.series>>()
  for (const [values, value] of observations) {
    const key = values.join('\0')
    let one = series.get(key)
    if (one === undefined) {
      one = histogram.series(labelled ? Object.fromEntries(LABELS.map((label, i) => [label, values[i] ?? ''])) : {})
      series.set(labelled ? key : '', one)
    }
    one(value)
  }
  if (!labelled && series.size === 0) histogram.series()
  return histogram.text()
}

describe('prometheusHistogram', () => {
  it('writes the same text as prom-client for the same observations: bounds inclusive, +Inf, sums, series in order', async () => {
    const observations: Array<[string[], number]> = [
      [['POST', '/plants', '201'], 0.0005], [['POST', '/plants', '201'], 0.0007], [['GET', 'unmatched', '404'], 20],
      [['POST', '/plants', '201'], 0.1 + 0.2], [['POST', '/pl"a\\nts\n', '400'], 10], [['GET', 'unmatched', '404'], 0]
    ]
    const help = 'Duration, "quoted" \\ and\nsplit'
    expect(counted(help, true, observations)).toBe(await library(help, true, observations))
    expect(counted(help, true, [])).toBe(await library(help, true, []))
  })

  it('writes an unlabelled histogram\'s one series from the start, zeros included, as prom-client does', async () => {
    expect(counted('Insert time.', false, [])).toBe(await library('Insert time.', false, []))
    const observations: Array<[string[], number]> = [[[], 0.003], [[], 7.5], [[], 0.0001]]
    expect(counted('Insert time.', false, observations)).toBe(await library('Insert time.', false, observations))
  })

  it('agrees with prom-client on any observations', async () => {
    const value = fc.oneof(fc.constantFrom(...DURATION_BUCKETS), fc.double({ min: 0, max: 20, noNaN: true }))
    const labels = fc.tuple(fc.constantFrom('POST', 'GET'), fc.string({ maxLength: 5 }), fc.constantFrom('200', '503'))
    await fc.assert(fc.asyncProperty(fc.array(fc.tuple(labels, value), { maxLength: 30 }), async (observations) => {
      expect(counted('h', true, observations)).toBe(await library('h', true, observations))
    }))
  })
})
