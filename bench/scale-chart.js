// Draws the chart of `npm run bench:scale` results: throughput, p99, the longest single request and
// the server's CPU per request against plants stored, one line per store and id pattern. Vega-Lite
// compiled to Vega and rendered to SVG in Node (no browser, no canvas: Vega estimates text widths).
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
  { key: 'rps', title: 'throughput (req/s)' },
  { key: 'p99', title: 'p99 latency (ms, median of the windows)', log: true },
  // The target for a single request: none slower than 100 ms.
  { key: 'max', title: 'longest single request (ms)', log: true, rule: 100 },
  // The server's CPU time per request: what other work on a shared machine disturbs least.
  { key: 'cpuUsPerReq', title: 'server CPU per request (µs)' }
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
      const row = { series: `${fill.label ?? fill.store}, ${fill.ids} ids`, plants: s.plants / 1e6 }
      for (const { key } of METRICS) row[key] = s[key]
      rows.push(row)
    }
  }
}
if (rows.length === 0) throw new Error(`scale-chart: no steps in ${files.join(', ')}`)

const panel = ({ key, title, log, rule }, last) => ({
  width: 640,
  height: 170,
  layer: [
    {
      mark: { type: 'line', point: { size: 18 } },
      encoding: {
        x: { field: 'plants', type: 'quantitative', title: last ? 'plants stored (millions)' : null },
        y: { field: key, type: 'quantitative', title, scale: log ? { type: 'log' } : { zero: true } },
        color: { field: 'series', type: 'nominal', title: 'store, ids' }
      }
    },
    ...(rule === undefined ? [] : [{ mark: { type: 'rule', strokeDash: [4, 4], color: 'gray' }, encoding: { y: { datum: rule } } }])
  ]
})

const spec = {
  $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
  title: {
    text: 'Plant Store: the cost as a store fills (npm run bench:scale)',
    subtitle: `${startedAt.slice(0, 10)}, ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}`
  },
  data: { values: rows },
  vconcat: METRICS.map((m, i) => panel(m, i === METRICS.length - 1)),
  config: { background: 'white', axisY: { titleFontSize: 10 }, legend: { labelLimit: 320 } }
}

const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' })
const svg = await view.toSVG()
writeFileSync(args.out, svg)
console.log(`written: ${args.out} (${rows.length} steps from ${files.join(', ')})`)
