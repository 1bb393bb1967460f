import { Counter, Histogram, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { HotCounter, HotHistogram } from '../../src/lib/hot-metrics.js'

/** The exposition's sample lines, sorted, with label order inside the braces normalised. */
const samples = (text: string): string[] => text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).map((line) =>
  line.replace(/\{(.*)\}/, (_, labels: string) => `{${labels.split(/,(?=[a-z_]+=")/).sort().join(',')}}`)).sort()

describe('HotHistogram and HotCounter', () => {
  it('write byte for byte the exposition of prom-client\'s own Histogram and Counter for the same observations', async () => {
    const hot = new Registry()
    const reference = new Registry()
    const buckets = [0.001, 0.01, 0.1, 1]
    const hotHistogram = new HotHistogram({ name: 'h_seconds', help: 'h', labelNames: ['route', 'code'], buckets, registry: hot })
    const refHistogram = new Histogram({ name: 'h_seconds', help: 'h', labelNames: ['route', 'code'], buckets, registers: [reference] })
    const hotCounter = new HotCounter({ name: 'c_total', help: 'c', labelNames: ['outcome'], registry: hot })
    const refCounter = new Counter({ name: 'c_total', help: 'c', labelNames: ['outcome'], registers: [reference] })
    // Values on a bound fall into that bound's bucket (le is "less than or equal").
    const observations: Array<[string, string, number]> = [['/a', '200', 0.0005], ['/a', '200', 0.001], ['/a', '500', 0.5], ['/b', '200', 3], ['/a', '200', 0.01]]
    for (const [route, code, value] of observations) {
      hotHistogram.child({ route, code }).observe(value)
      refHistogram.labels({ route, code }).observe(value)
    }
    for (const outcome of ['x', 'y', 'x']) {
      hotCounter.child({ outcome }).inc()
      refCounter.labels({ outcome }).inc()
    }
    // And one without labels, as the store's duration histogram.
    const hotPlain = new HotHistogram({ name: 'n_seconds', help: 'n', buckets, registry: hot }).child()
    const refPlain = new Histogram({ name: 'n_seconds', help: 'n', buckets, registers: [reference] })
    for (const [, , value] of observations) {
      hotPlain.observe(value)
      refPlain.observe(value)
    }
    const text = await hot.metrics()
    // Byte for byte: the kept fast path (docs/performance.md) writes exactly what prom-client writes.
    expect(text).toBe(await reference.metrics())
    expect(samples(text)).toEqual(samples(await reference.metrics()))
    expect(text).toContain('# TYPE h_seconds histogram')
    expect(text).toContain('# TYPE c_total counter')
  })

  it('gives one child per label set, refuses missing or extra labels, and resets to zero', async () => {
    const registry = new Registry()
    const histogram = new HotHistogram({ name: 'h', help: 'h', labelNames: ['a'], buckets: [1], registry })
    expect(histogram.child({ a: 'x' })).toBe(histogram.child({ a: 'x' }))
    expect(() => histogram.child({})).toThrow('h: labels must be exactly a')
    expect(() => histogram.child({ a: 'x', b: 'y' })).toThrow('h: labels must be exactly a')
    expect(() => new HotHistogram({ name: 'g', help: 'g', buckets: [2, 1], registry })).toThrow('g: buckets must be finite and increasing')
    expect(() => new HotCounter({ name: 'c', help: 'c', registry })).toThrow('c: a counter\'s name ends in _total')
    histogram.child({ a: 'x' }).observe(5)
    registry.resetMetrics()
    expect(await registry.metrics()).toContain('h_count{a="x"} 0')
  })
})
