// Summarises a V8 .cpuprofile (from `node --cpu-prof`, e.g. `npm run bench -- --cpu-prof`):
// self time by package or file, self time by function, and total (inclusive) time by function.
// Usage: node bench/profile-summary.js <file.cpuprofile> [top=25] [filter]
//   filter: only count samples whose stack contains a frame matching this text (e.g. "onRequest")
import { readFileSync } from 'node:fs'

const [file, topArg = '25', filter] = process.argv.slice(2)
if (file === undefined) {
  console.error('usage: node bench/profile-summary.js <file.cpuprofile> [top] [filter]')
  process.exit(2)
}
const top = Number(topArg)
const profile = JSON.parse(readFileSync(file, 'utf8'))
const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const parent = new Map()
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)

const shortUrl = (url) => {
  const path = url.replace(/^file:\/\//, '')
  return path.includes('/node_modules/') ? path.replace(/^.*\/node_modules\//, 'npm:') : path.replace(/^.*\/(dist|bench|src)\//, '$1/')
}
const where = (frame) => {
  const url = shortUrl(frame.url)
  if (url === '') return '(native/V8)'
  if (url.startsWith('node:')) return url
  if (url.startsWith('npm:')) {
    const parts = url.slice(4).split('/')
    return 'npm:' + (parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0])
  }
  return url
}
const key = (frame) => `${frame.functionName || '(anonymous)'}  ${shortUrl(frame.url)}:${frame.lineNumber + 1}`

const self = new Map()
const selfWhere = new Map()
const total = new Map()
let all = 0
const add = (map, k, v) => map.set(k, (map.get(k) ?? 0) + v)
const { samples, timeDeltas } = profile
for (let i = 0; i < samples.length; i++) {
  const dt = timeDeltas[i] ?? 0
  const leaf = byId.get(samples[i])
  const stack = []
  for (let id = samples[i]; id !== undefined; id = parent.get(id)) stack.push(byId.get(id).callFrame)
  if (filter !== undefined && !stack.some((frame) => key(frame).includes(filter))) continue
  if (leaf.callFrame.functionName === '(idle)' || leaf.callFrame.functionName === '(program)') {
    add(self, key(leaf.callFrame), dt)
    all += dt
    continue
  }
  all += dt
  add(self, key(leaf.callFrame), dt)
  add(selfWhere, where(leaf.callFrame), dt)
  for (const k of new Set(stack.map(key))) add(total, k, dt)
}

const print = (title, map, n) => {
  console.log(`\n${title}`)
  for (const [k, v] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n)) {
    console.log(`${(v / 1000).toFixed(0).padStart(8)} ms ${(100 * v / all).toFixed(1).padStart(5)} %  ${k}`)
  }
}
console.log(`${file}: ${(all / 1e6).toFixed(2)} s sampled${filter === undefined ? '' : ` (stacks containing "${filter}")`}`)
print('self time by package / file', selfWhere, top)
print('self time by function', self, top)
print('total (inclusive) time by function', total, top)
