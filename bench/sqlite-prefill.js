// Fills a SQLite plant file with N plants of random ids, fast (100,000 rows per transaction), so that
// a store can be measured at a size a fill over HTTP takes an hour to reach: e.g. the image under
// `--memory 256m` with a file larger than its limit (docs/deployment.md, "SQLite past the memory
// limit"). The table is created by the service's own migration (dist/), then filled as the service
// would: the same columns, random ids below 2^53, the bench's plant name.
// Usage: npm run build && node bench/sqlite-prefill.js <file> <plants>
import Database from 'better-sqlite3'
import { createSqlitePlantRepository } from '../dist/plants/sqlite-plant-repository.js'

const [file, plantsArg] = process.argv.slice(2)
const plants = Number(plantsArg)
if (file === undefined || !(plants > 0)) throw new Error('usage: node bench/sqlite-prefill.js <file> <plants>')

await (await createSqlitePlantRepository({ path: file })).close()
const db = new Database(file)
db.pragma('journal_mode = WAL')
// A page cache for the fill alone (1 GiB): the service's own setting is left as the migration made it.
db.pragma('cache_size = -1048576')
const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, NULL) ON CONFLICT (id) DO NOTHING')
const batch = db.transaction((n) => {
  for (let i = 0; i < n; i++) insert.run(BigInt(1 + Math.floor(Math.random() * (2 ** 53 - 2))), 'bench plant')
})
const started = Date.now()
for (let done = 0; done < plants; done += 100_000) {
  batch(Math.min(100_000, plants - done))
  if ((done + 100_000) % 1_000_000 === 0) console.log(`${done + 100_000} added in ${Math.round((Date.now() - started) / 1000)} s`)
}
db.pragma('wal_checkpoint(TRUNCATE)')
const { count } = db.prepare('SELECT count(*) AS count FROM plants').get()
db.close()
console.log(`${file}: ${count} plants`)
