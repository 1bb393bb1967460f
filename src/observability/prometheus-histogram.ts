/** Prometheus text escaping, as prom-client writes HELP text and label values. */
const escape = (text: string): string => text.replaceAll('\\', '\\\\').replaceAll('\n', '\\n')
const quote = (value: string): string => escape(value).replaceAll('"', '\\"')

/**
 * A histogram counted in place and written in prom-client's text, byte for byte: prom-client's own
 * observe() costs about a microsecond, each request (docs/performance.md, "Fast paths and their numbers").
 */
export function prometheusHistogram (name: string, help: string, buckets: readonly number[]) {
  const all: Array<{ labels: string, counts: number[], sum: number }> = []
  return {
    /** A new series, taken once per label set: the function that observes a value in it. */
    series (labels: Record<string, string> = {}) {
      const pairs = Object.entries(labels).map(([label, value]) => `,${label}="${quote(value)}"`)
      const state = { labels: pairs.join(''), counts: new Array<number>(buckets.length + 1).fill(0), sum: 0 }
      all.push(state)
      return (value: number): void => {
        let bucket = 0
        while (value > (buckets[bucket] ?? Infinity)) bucket++
        state.counts[bucket] = (state.counts[bucket] as number) + 1
        state.sum += value
      }
    },
    /** The exposition, as prom-client's Registry writes a histogram (a series appears once taken). */
    text (): string {
      const lines = [`# HELP ${name} ${escape(help)}`, `# TYPE ${name} histogram`]
      for (const { labels, counts, sum } of all) {
        let cumulative = 0
        for (const [index, bound] of [...buckets, '+Inf'].entries()) {
          cumulative += counts[index] as number
          lines.push(`${name}_bucket{le="${bound}"${labels}} ${cumulative}`)
        }
        const braces = labels === '' ? '' : `{${labels.slice(1)}}`
        // The count is the +Inf bucket's.
        lines.push(`${name}_sum${braces} ${sum}`, `${name}_count${braces} ${cumulative}`)
      }
      return lines.join('\n')
    }
  }
}
