// Adds N plants of random ids to a PostgreSQL plant table, fast (1,000,000 rows per statement, generated
// by the server), so that the store can be measured at a size a fill over HTTP takes hours to reach
// (bench/scale.js --url ... --stored N; docs/performance.md, "Every store against the flatness targets").
// The schema is the service's own (dist/, its migration); the rows are what the service stores for the
// bench's requests: random ids below 2^53, the bench's plant name, no tag. The index is kept up to date
// row by row, as under the service, so its pages are split the way random inserts split them.
// Usage: npm run build && node bench/postgres-prefill.js <postgres url> <plants>
import { createPostgresPlantRepository } from '../dist/plants/postgres-plant-repository.js'
import { pgClient } from './postgres.js'

const [url, plantsArg] = process.argv.slice(2)
const plants = Number(plantsArg)
if (url === undefined || !(plants > 0)) throw new Error('usage: node bench/postgres-prefill.js <postgres url> <plants>')

const store = createPostgresPlantRepository({ connectionString: url })
await store.ready()
await store.close()
const client = await pgClient(url)
const started = Date.now()
for (let done = 0; done < plants; done += 1_000_000) {
  const n = Math.min(1_000_000, plants - done)
  await client.query(`INSERT INTO plants (id, name, tag)
    SELECT 1 + floor(random() * (2^53 - 2))::int8, 'bench plant', NULL FROM generate_series(1, ${n})
    ON CONFLICT (id) DO NOTHING`)
  console.log(`${done + n} added in ${Math.round((Date.now() - started) / 1000)} s`)
}
const { rows } = await client.query('SELECT count(*)::int8::text AS count FROM plants')
await client.end()
console.log(`${rows[0].count} plants`)
