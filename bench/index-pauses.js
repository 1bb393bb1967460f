// The stores' indexes alone, without HTTP: each insert timed, from empty to N plants, for the memory
// repository (dist/plants/memory-plant-repository.js: SafeIntegerMap + TextArena) and for a plain
// `Map` of plant objects (what bench/peer.js keeps). Per million plants: the longest single insert
// (a rehash, a garbage collection), the 99.9th percentile, and RSS and heap per plant. Run in one
// process per store, so neither one's heap disturbs the other's figures.
// Usage: npm run build && node bench/index-pauses.js [store: memory|map] [plants] [step]
//   with no store, runs both (each in its own child process) and prints them side by side.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createMemoryPlantRepository } from '../dist/plants/memory-plant-repository.js'

const argv = process.argv.slice(2)
const store = ['memory', 'map'].includes(argv[0]) ? argv.shift() : undefined
const [plantsArg, stepArg] = argv
const plants = Number(plantsArg ?? 10_000_000)
const step = Number(stepArg ?? 1_000_000)

if (store === undefined) {
  for (const s of ['memory', 'map']) {
    process.stdout.write(execFileSync(process.execPath, [fileURLToPath(import.meta.url), s, String(plants), String(step)], { encoding: 'utf8' }))
  }
  process.exit(0)
}

// Random ids below 2^53, as bench:scale's; a name per plant as a request's JSON.parse makes one.
const randomId = () => 1 + Math.floor(Math.random() * (2 ** 53 - 2))
let insert
if (store === 'memory') {
  const repository = createMemoryPlantRepository({ maxPlants: plants + 1 })
  insert = (id, plant) => repository.insert(id, plant)
} else {
  const map = new Map()
  insert = (id, plant) => {
    const stored = map.get(id)
    if (stored === undefined) map.set(id, plant)
  }
}

const rss0 = process.memoryUsage().rss
const times = new Float64Array(step)
let longest = 0
let longestAt = 0
// The main thread's CPU time per insert too: on a shared machine a long wall-clock insert may only be
// the process waiting for a CPU; a long CPU-time insert is work the store itself did (a rehash).
let longestCpu = 0
let longestCpuAt = 0
console.log(`${store}: plants, longest insert ms (at), longest insert in CPU time ms (at), p99.9 µs, RSS bytes/plant, heap used bytes/plant`)
for (let done = 0; done < plants;) {
  const n = Math.min(step, plants - done)
  longest = 0
  longestCpu = 0
  for (let i = 0; i < n; i++) {
    const plant = JSON.parse('{"name":"bench plant"}')
    const id = randomId()
    const c0 = process.threadCpuUsage()
    const t0 = process.hrtime.bigint()
    insert(id, plant)
    const t = Number(process.hrtime.bigint() - t0) / 1e6
    const c1 = process.threadCpuUsage()
    times[i] = t
    if (t > longest) { longest = t; longestAt = done + i + 1 }
    const cpu = (c1.user - c0.user + c1.system - c0.system) / 1000
    if (cpu > longestCpu) { longestCpu = cpu; longestCpuAt = done + i + 1 }
  }
  done += n
  const sorted = times.subarray(0, n).sort()
  const usage = process.memoryUsage()
  console.log(`${store} ${done} ${longest.toFixed(1)} (${longestAt}) ${longestCpu.toFixed(1)} (${longestCpuAt}) ${(sorted[Math.floor(n * 0.999)] * 1000).toFixed(2)} ${Math.round((usage.rss - rss0) / done)} ${Math.round(usage.heapUsed / done)}`)
}
