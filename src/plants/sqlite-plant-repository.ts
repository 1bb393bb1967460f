import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { StoreFullError, StoreUnavailableError } from '../errors.js'
import { ConfigError } from '../config/config-error.js'
import type { Plant, PlantId } from '../schemas.js'
import { createGroupCommit, type Pending } from '../sql/group-commit.js'
import type { InsertOutcome, PlantRepository } from './plant-repository.js'

type Entry = Pending<{ id: bigint, plant: Plant }, InsertOutcome>

/**
 * Plants in one SQLite file (its folder created when missing), durable on 200 (WAL, `synchronous=FULL`). Inserts that
 * arrive in the same turn share one transaction (group commit), so an fsync is not paid per request. A write waits
 * busyTimeoutMs (default 1000) for another process's lock, retrying off the event loop; maxPageCount caps the file's
 * size in pages, like a full disk (tests use it to reach SQLITE_FULL).
 */
export function createSqlitePlantRepository (path: string,
  { busyTimeoutMs = 1000, maxPageCount }: { busyTimeoutMs?: number, maxPageCount?: number } = {}): PlantRepository {
  if (path === '' || path === ':memory:') {
    throw new ConfigError('DATABASE_URL: sqlite: needs a file path, e.g. sqlite:./data/plants.db ' +
      '(for a store in memory, use memory:)')
  }
  let db: Database.Database | undefined
  try {
    mkdirSync(dirname(path), { recursive: true })
    db = new Database(path, { timeout: busyTimeoutMs })
    db.pragma('journal_mode = WAL')
    // better-sqlite3's default in WAL (NORMAL) may lose a commit on power failure: FULL makes "200" mean "on disk".
    db.pragma('synchronous = FULL')
    if (maxPageCount !== undefined) db.pragma(`max_page_count = ${maxPageCount}`)
    migrate(db)
    // From now on a locked file fails at once and flush() waits between attempts: SQLite's own wait is a busy loop.
    db.pragma('busy_timeout = 0')
  } catch (error) {
    // Before the file is open, DATABASE_URL names what cannot be; after, the file is what is wrong.
    const reason = `${path}: ${error instanceof Error ? error.message : String(error)}`
    if (db === undefined) throw new ConfigError(`DATABASE_URL: cannot open the SQLite database ${reason}`)
    db.close()
    throw new Error(`SQLite database ${reason}`, { cause: error })
  }

  const insertRow = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING')
  // 1 for the same plant (`IS`: both without a tag too), 0 for another. Ids are bound as bigints, never read back.
  const sameRow = db.prepare('SELECT name = ? AND tag IS ? FROM plants WHERE id = ?').pluck()
  // BEGIN IMMEDIATE; rolled back when anything throws (SQLite may have rolled back already, e.g. on SQLITE_FULL).
  const insertAll = db.transaction((batch: Entry[]) => batch.map(({ item: { id, plant } }): InsertOutcome => {
    if (insertRow.run(id, plant.name, plant.tag ?? null).changes === 1) return 'created'
    return sameRow.get(plant.name, plant.tag ?? null, id) === 1 ? 'same' : 'conflict'
  })).immediate

  /** One transaction per batch, in arrival order; while another process holds the lock, retried every 5 ms. */
  async function flush (batch: Entry[]): Promise<void> {
    try {
      insertAll(batch).forEach((outcome, index) => { (batch[index] as Entry).resolve(outcome) })
    } catch (error) {
      const code = error instanceof Database.SqliteError ? error.code : ''
      // SQLITE_FULL is a full disk (507); every other failure of the file is a 503 the client may retry.
      if (code === 'SQLITE_FULL') throw new StoreFullError({ cause: error })
      const retry = code.startsWith('SQLITE_BUSY') && performance.now() < (batch[0] as Entry).queuedAt + busyTimeoutMs
      if (!retry) throw new StoreUnavailableError({ cause: error })
      await sleep(5)
      await flush(batch)
    }
  }
  // One batch at a time (better-sqlite3 commits synchronously), of at most 1000 inserts: one commit's time is bounded.
  const batches = createGroupCommit(flush, 1000)

  return {
    insert: (id: PlantId, plant: Plant) => batches.add({ id: BigInt(id), plant }),
    ready: async () => { if (!db.open) throw new StoreUnavailableError() },
    observe: batches.observe,
    async close () {
      await batches.close()
      db.close()
    }
  }
}

// Versioned steps, never edited once released, under BEGIN IMMEDIATE: one process at a time migrates, as PostgreSQL's
// MIGRATE does. runs_on is the oldest release version that may run on the schema after the step: a step older
// releases can ignore (a table or an index added) keeps the floor before it; any other raises it to its own version.
const migrate = (db: Database.Database): void => db.transaction(() => {
  db.exec('CREATE TABLE IF NOT EXISTS plant_store_migrations ' +
    '(version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL, runs_on INTEGER) STRICT')
  const columns = db.prepare("SELECT name FROM pragma_table_info('plant_store_migrations')").pluck().all()
  if (!columns.includes('runs_on')) db.exec('ALTER TABLE plant_store_migrations ADD COLUMN runs_on INTEGER')
  // The floor only rises with the version, so the schema's is the highest (a row without one: its own version).
  const [version, oldest] = db.prepare('SELECT coalesce(max(version), 0), ' +
    'coalesce(max(coalesce(runs_on, version)), 0) FROM plant_store_migrations').raw().get() as [number, number]
  if (oldest > 1) {
    throw new Error(`schema version ${version} needs a release that knows version ${oldest} or later; this one knows 1`)
  }
  if (version < 1) {
    // STRICT keeps a REAL or TEXT out of the int64 id.
    db.exec(`CREATE TABLE plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))) STRICT;
    INSERT INTO plant_store_migrations (version, applied_at, runs_on) VALUES (1, strftime('%Y-%m-%dT%H:%M:%fZ'), 1)`)
  }
}).immediate()
