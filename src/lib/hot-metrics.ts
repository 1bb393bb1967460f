import type { Metric, Registry } from 'prom-client'

/**
 * A histogram and a counter for the per-request path, registered in a prom-client Registry and
 * written by it like its own. prom-client's labelled child hashes its label object and validates
 * it on every observation (320 ns per `histogram.labels(...).observe(v)`, 75 ns per counter `inc()`,
 * Node 20, a warm loop); a child here is a plain object the caller keeps, so an observation is
 * a bucket search and three additions (about 5 ns). Label values are fixed when a child is made.
 */

type Labels = Readonly<Record<string, string>>

interface Sample {
  value: number
  labels: Record<string, string | number>
  metricName?: string
}

/** What prom-client's Registry reads from a metric (`get()`) to write the exposition text. */
interface Exported {
  name: string
  help: string
  type: 'histogram' | 'counter'
  aggregator: 'sum'
  values: Sample[]
}

export class HistogramChild {
  /** Observations per bucket, not cumulative; the last one is above every bound (+Inf). */
  readonly counts: Float64Array
  sum = 0
  count = 0
  readonly #bounds: Float64Array

  constructor (bounds: Float64Array) {
    this.#bounds = bounds
    this.counts = new Float64Array(bounds.length + 1)
  }

  observe (value: number): void {
    const bounds = this.#bounds
    let i = 0
    while (i < bounds.length && value > (bounds[i] as number)) i++
    this.counts[i] = (this.counts[i] as number) + 1
    this.sum += value
    this.count++
  }
}

export class CounterChild {
  value = 0
  inc (): void { this.value++ }
}

abstract class HotMetric<Child> {
  readonly name: string
  readonly help: string
  readonly aggregator = 'sum'
  readonly #labelNames: readonly string[]
  readonly #children = new Map<string, { labels: Labels, child: Child }>()

  constructor (name: string, help: string, labelNames: readonly string[], registry: Registry) {
    this.name = name
    this.help = help
    this.#labelNames = labelNames
    // The Registry takes any object with name, help, type and get(); its types list only its own classes.
    registry.registerMetric(this as unknown as Metric)
  }

  /** The child for these label values, made once: keep it, and observe through it. */
  child (labels: Labels = {}): Child {
    const names = Object.keys(labels)
    if (names.length !== this.#labelNames.length || this.#labelNames.some((name) => typeof labels[name] !== 'string')) {
      throw new Error(`${this.name}: labels must be exactly ${this.#labelNames.join(', ') || '(none)'}`)
    }
    const key = JSON.stringify(this.#labelNames.map((name) => labels[name]))
    let entry = this.#children.get(key)
    if (entry === undefined) this.#children.set(key, entry = { labels: { ...labels }, child: this.makeChild() })
    return entry.child
  }

  protected abstract makeChild (): Child
  protected abstract samples (labels: Labels, child: Child): Sample[]

  /** For the Registry, at scrape time. */
  get (): Exported {
    const values: Sample[] = []
    for (const { labels, child } of this.#children.values()) values.push(...this.samples(labels, child))
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }

  abstract readonly type: 'histogram' | 'counter'
  abstract reset (): void

  protected forEachChild (fn: (child: Child) => void): void {
    for (const entry of this.#children.values()) fn(entry.child)
  }
}

export class HotHistogram extends HotMetric<HistogramChild> {
  readonly type = 'histogram'
  readonly #bounds: Float64Array

  constructor ({ name, help, labelNames = [], buckets, registry }: { name: string, help: string, labelNames?: readonly string[], buckets: readonly number[], registry: Registry }) {
    super(name, help, labelNames, registry)
    if (buckets.length === 0 || buckets.some((bound, i) => !Number.isFinite(bound) || (i > 0 && bound <= (buckets[i - 1] as number)))) {
      throw new Error(`${name}: buckets must be finite and increasing`)
    }
    this.#bounds = Float64Array.from(buckets)
  }

  protected makeChild (): HistogramChild { return new HistogramChild(this.#bounds) }

  // `le` first, as prom-client writes it: the exposition is byte-equal to its own (test/lib/hot-metrics.test.ts).
  protected samples (labels: Labels, child: HistogramChild): Sample[] {
    const samples: Sample[] = []
    let cumulative = 0
    this.#bounds.forEach((bound, i) => {
      cumulative += child.counts[i] as number
      samples.push({ metricName: `${this.name}_bucket`, labels: { le: bound, ...labels }, value: cumulative })
    })
    samples.push(
      { metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...labels }, value: child.count },
      { metricName: `${this.name}_sum`, labels: { ...labels }, value: child.sum },
      { metricName: `${this.name}_count`, labels: { ...labels }, value: child.count }
    )
    return samples
  }

  reset (): void {
    this.forEachChild((child) => {
      child.counts.fill(0)
      child.sum = 0
      child.count = 0
    })
  }
}

export class HotCounter extends HotMetric<CounterChild> {
  readonly type = 'counter'

  constructor ({ name, help, labelNames = [], registry }: { name: string, help: string, labelNames?: readonly string[], registry: Registry }) {
    if (!name.endsWith('_total')) throw new Error(`${name}: a counter's name ends in _total`)
    super(name, help, labelNames, registry)
  }

  protected makeChild (): CounterChild { return new CounterChild() }

  protected samples (labels: Labels, child: CounterChild): Sample[] {
    return [{ labels: { ...labels }, value: child.value }]
  }

  reset (): void {
    this.forEachChild((child) => { child.value = 0 })
  }
}
