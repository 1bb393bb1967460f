// Draws the chart of `npm run bench:scale` results: throughput, p99 and the longest single request
// against plants stored, one line per store and id pattern. Vega-Lite compiled to Vega and rendered
// to SVG in Node (no browser, no canvas: text is measured by Vega's estimate).
// Usage: node bench/scale-chart.js [--out docs/scale.svg] [result.json …] (default bench/results/scale-latest.json)
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import * as vega from 'vega'
import { compile } from 'vega-lite'
import { RESULTS, ROOT } from './util.js'

const { values: args, positionals } = parseArgs({ allowPositionals: true, options: { out: { type: 'string', default: join(ROOT, 'docs', 'scale.svg') } } })
const files = positionals.length > 0 ? positionals : [join(RESULTS, 'scale-latest.json')]

const METRICS = [
  ['rps', 'throughput (req/s)'],
  ['p99', 'p99 latency (ms, median of the windows)'],
  ['max', 'longest single request (ms)']
]
const rows = []
let machine
let startedAt
for (const file of files) {
  const result = JSON.parse(readFileSync(file, 'utf8'))
  machine ??= result.machine
  startedAt ??= result.startedAt
  for (const fill of result.fills) {
    for (const s of fill.steps ?? []) {
      for (const [key, metric] of METRICS) {
        rows.push({ series: `${fill.store}, ${fill.ids} ids`, plants: s.plants / 1e6, metric, value: s[key] })
      }
    }
  }
}
if (rows.length === 0) throw new Error(`scale-chart: no steps in ${files.join(', ')}`)

const spec = {
  $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
  title: {
    text: 'Plant Store: cost as a store fills (npm run bench:scale)',
    subtitle: `${startedAt.slice(0, 10)}, ${machine.cpu}, ${machine.cores} cores (shared), Node ${machine.node}`
  },
  data: { values: rows },
  facet: { row: { field: 'metric', type: 'nominal', sort: METRICS.map(([, m]) => m), title: null } },
  spec: {
    width: 640,
    height: 180,
    mark: { type: 'line', point: { size: 18 } },
    encoding: {
      x: { field: 'plants', type: 'quantitative', title: 'plants stored (millions)' },
      y: { field: 'value', type: 'quantitative', title: null },
      color: { field: 'series', type: 'nominal', title: 'store, ids' }
    }
  },
  resolve: { scale: { y: 'independent' } },
  config: { background: 'white' }
}

const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' })
const svg = await view.toSVG()
writeFileSync(args.out, svg)
console.log(`written: ${args.out} (${rows.length / METRICS.length} steps from ${files.join(', ')})`)
