// Memory per stored plant in the memory store, measured on the heap (run with --expose-gc):
// N plants go through the service layer into the memory repository, exactly as POST /plants stores
// them (body parsed by the service's int64 JSON parser, Plant object built by the service, kept by
// the repository). Reports the heap used per plant, the heap used by the name strings alone
// (measured the same way), and the difference: the store's own cost per plant.
// Usage: node --expose-gc bench/memory-per-plant.js [plants]   → prints one `BENCH_RESULT {json}` line
import { parseBody } from '../dist/plugins/json-body.js'
import { createMemoryPlantRepository } from '../dist/plants/memory-plant-repository.js'
import { createPlantService } from '../dist/plants/plant-service.js'

const gc = globalThis.gc
if (typeof gc !== 'function') {
  console.error('memory-per-plant: run with node --expose-gc')
  process.exit(2)
}
const count = Number(process.argv[2] ?? 1_000_000)
// The ids the benchmark sends: ordinary 13-digit int64 ids (heap numbers, as most real ids are).
const FIRST_ID = 2 ** 32
const body = (i) => `{"id":${FIRST_ID + i * 7},"name":"plant ${i}"}`
const parseJsonExact = (text) => parseBody(Buffer.from(text), undefined, Infinity)

// The JS heap plus memory held outside it by ArrayBuffers (typed arrays' backing stores, such as the
// memory store's key table): both are what the store costs.
function heapUsed () {
  gc()
  gc()
  const { heapUsed, arrayBuffers } = process.memoryUsage()
  return heapUsed + arrayBuffers
}

// 1. The strings alone: the same names, made the same way (parsed from a JSON body), kept in an
//    array; the array's own slots (8 bytes each) are taken off.
const names = new Array(count).fill(undefined)
let before = heapUsed()
for (let i = 0; i < count; i++) names[i] = parseJsonExact(body(i)).name
const stringBytes = (heapUsed() - before) / count - 8
const nameLength = names[count - 1].length
names.length = 0

// 2. The store: every plant through the service into the repository.
// Measured from before the repository exists: what it reserves up front (its id index) counts too.
before = heapUsed()
const repository = createMemoryPlantRepository({ maxPlants: count })
const service = createPlantService(repository)
const rssBefore = process.memoryUsage().rss
for (let i = 0; i < count; i++) await service.create(parseJsonExact(body(i)))
const totalBytes = (heapUsed() - before) / count
const rssBytes = (process.memoryUsage().rss - rssBefore) / count

process.stdout.write('BENCH_RESULT ' + JSON.stringify({
  plants: count,
  nameLength,
  heapBytesPerPlant: Math.round(totalBytes * 10) / 10,
  stringBytesPerPlant: Math.round(stringBytes * 10) / 10,
  beyondStringsBytesPerPlant: Math.round((totalBytes - stringBytes) * 10) / 10,
  rssBytesPerPlant: Math.round(rssBytes * 10) / 10
}) + '\n')
await repository.close()
