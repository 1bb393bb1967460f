import type { Config } from '../config/load-config.js'
import { StoreOutcomeUnknownError, StoreUnavailableError, WritesFailingError } from '../errors.js'
import type { Plant, PlantId } from '../schemas.js'
import type { FailureLogger } from '../observability/failure-log.js'
import { createGroupCommit, type Pending } from '../sql/group-commit.js'
import { awaitAtMost, noop } from '../sql/postgres-hosts.js'
import { createSession, unavailable } from '../sql/postgres-session.js'
import { samePlant, type InsertOutcome, type PlantRepository } from './plant-repository.js'

type Entry = Pending<Plant & { id: string }, InsertOutcome>
interface StoredRow { id: string, name: string, tag: string | null }

// One array parameter per column; ids travel as text both ways, never a JS number, whatever int8 parser is set. In id
// order, so that concurrent batches (other replicas) take row locks in one order: no deadlock. Of two rows with one id,
// the first inserted is the first that came. Unnamed, as every statement here: one path through any pooler.
const INSERT_BATCH = 'INSERT INTO plants (id, name, tag) SELECT id, name, tag FROM unnest($1::int8[], ' +
  '$2::text[], $3::text[]) WITH ORDINALITY AS batch (id, name, tag, arrival) ORDER BY id, arrival ' +
  'ON CONFLICT (id) DO NOTHING RETURNING id::text AS id'
const SELECT_STORED = 'SELECT id::text AS id, name, tag FROM plants WHERE id = ANY ($1::int8[])'
// Versioned steps (a released one is never edited) under a lock the replicas share, released by the commit, so
// it works through transaction pooling. An up-to-date schema writes nothing: a replica on a read-only server
// starts, and its creates answer 503. Each row records the oldest release version that may run on the schema:
// a compatible step (a table or an index added) keeps it, another raises it to its own version (rows from before
// the column: their own version).
const MIGRATE = `DO $$
DECLARE v int; oldest int;
BEGIN
  IF current_setting('server_version_num')::int < 130000 THEN
    RAISE 'PostgreSQL 13 or later is needed; the server is %', current_setting('server_version');
  END IF;
  PERFORM pg_advisory_xact_lock(7165617846240257);
  IF to_regclass('plant_store_migrations') IS NULL THEN
    CREATE TABLE plant_store_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now(),
      runs_on int);
  ELSIF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'plant_store_migrations'::regclass
    AND attname = 'runs_on') THEN
    ALTER TABLE plant_store_migrations ADD COLUMN runs_on int;
  END IF;
  SELECT coalesce(max(version), 0), max(coalesce(runs_on, version)) INTO v, oldest FROM plant_store_migrations;
  IF oldest > 2 THEN
    RAISE 'schema version % needs a release that knows version % or later; this one knows 2', v, oldest;
  END IF;
  IF v < 1 THEN
    CREATE TABLE plants (id bigint PRIMARY KEY, name text NOT NULL, tag text,
      created_at timestamptz NOT NULL DEFAULT now());
    INSERT INTO plant_store_migrations (version, runs_on) VALUES (1, 1) RETURNING runs_on INTO oldest;
  END IF;
  IF v < 2 THEN
    -- Compatible. The readiness probe's row: a write through WAL and a synchronous commit, as a create, no plant.
    CREATE TABLE plant_store_heartbeat (id boolean PRIMARY KEY DEFAULT true CHECK (id),
      written_at timestamptz NOT NULL);
    INSERT INTO plant_store_migrations (version, runs_on) VALUES (2, oldest);
  END IF;
END $$`
// The readiness probe stores no plant and takes no lock a CREATE INDEX on plants waits on: the server takes this role's
// inserts (not read-only, INSERT granted), one row of plants is read (an ACCESS EXCLUSIVE lock fails it as it stops
// creates), and the heartbeat row's update commits, which waits for a synchronous standby as a create does.
// PostgreSQL runs a data-modifying WITH to completion whether or not the query reads it.
const PROBE = `WITH beat AS (INSERT INTO plant_store_heartbeat VALUES (true, now())
  ON CONFLICT (id) DO UPDATE SET written_at = now()) SELECT EXISTS (SELECT FROM plants) AS readable,
  NOT current_setting('transaction_read_only')::bool AND has_table_privilege('plants', 'INSERT') AS writable`

/** How long the last outcome of a write or a probe stands for readiness: at most one probe this often. */
const FRESH_MS = 1000

/**
 * Plants in PostgreSQL, shared by every replica: a 200 is a commit. A failure is StoreUnavailableError when
 * nothing was stored for sure, StoreOutcomeUnknownError when the write was sent and its answer lost. Readiness
 * tells the truth about writes: a write in flight for the statement timeout is a 503 at once. `url` names the server
 * or a pooler (several hosts, sslmode, sslrootcert as libpq reads them: docs/storage.md). DATABASE_STATEMENT_TIMEOUT_MS
 * bounds each insert's answer (+ 1 s) and a connect; `log` hears of the host chosen and the connections' errors.
 */
export function createPostgresPlantRepository (url: string,
  options: Partial<Config> & { log?: FailureLogger } = {}): PlantRepository {
  const { DATABASE_POOL_MAX: max = 10, DATABASE_STATEMENT_TIMEOUT_MS: statementTimeoutMs = 5000 } = options
  const session = createSession(url, max, statementTimeoutMs, options.log ?? { info: noop, warn: noop })

  let migrated = false
  let closed = false
  let retryTimer: NodeJS.Timeout | undefined
  let retryDelay = 250
  // The schema attempt in progress, or the last; a failed one resolves with the driver's error, ready()'s cause.
  let migration = migrate()
  // When each write (a batch, a probe) in flight started, oldest first.
  const writeStarts: number[] = []
  let lastOutcomeAt = -Infinity
  // Readiness's verdict: undefined while writes work, else since when they have failed with no success between.
  let writesFailing: { since: number, error: unknown } | undefined
  // The probe's write in progress; it never rejects, its outcome is in writesFailing.
  let probe: Promise<void> | undefined

  // Backing off while the database is not reached: an insert meanwhile fails at once, not after an attempt's timeout.
  function migrate (): Promise<unknown> {
    return session.query({ text: MIGRATE }, performance.now() + statementTimeoutMs).then(() => { migrated = true },
      (error: unknown) => {
        if (!closed) retryTimer = setTimeout(() => { migration = migrate() }, retryDelay * (0.5 + Math.random()))
        retryDelay = Math.min(retryDelay * 2, 10000)
        return error instanceof Error ? error.cause : error
      })
  }

  /** Waits for a schema attempt in progress (T at most); rejects while the database is not reached, with the cause. */
  async function whenMigrated (): Promise<void> {
    const failure = migrated ? undefined : await awaitAtMost(migration, statementTimeoutMs)
    if (!migrated) throw new StoreUnavailableError({ cause: failure ?? new Error('schema attempt: statement timeout') })
  }

  /** Runs a write (a batch, a probe): in writeStarts while it runs, then its outcome is readiness's verdict. */
  function tracked<T> (write: Promise<T>): Promise<T> {
    const start = performance.now()
    writeStarts.push(start)
    void write.then(() => { writesFailing = undefined }, (error: unknown) => {
      writesFailing = { since: writesFailing?.since ?? start, error }
    }).finally(() => {
      writeStarts.splice(writeStarts.indexOf(start), 1)
      lastOutcomeAt = performance.now()
    })
    return write
  }

  async function probeWrites (timeoutAt: number): Promise<void> {
    const { rows } = await session.query<{ writable: boolean }>({ text: PROBE }, timeoutAt)
    if (rows[0]?.writable !== true) throw unavailable('the server takes no writes')
  }

  const notReady = (now: number): Error => new WritesFailingError(
    String(Math.round(now - (writesFailing?.since ?? writeStarts[0] ?? now))), { cause: writesFailing?.error })

  // One batch of 1000 at most at a time, then up to 4 once one has run 100 ms: docs/performance.md says why.
  const batches = createGroupCommit(run, 1000, Math.min(4, max), 100)

  /** Inserts a batch as if its inserts ran one after another in arrival order. */
  async function run (batch: Entry[]): Promise<void> {
    const timeoutAt = (batch[0] as Entry).queuedAt + statementTimeoutMs
    const values = (['id', 'name', 'tag'] as const).map((column) => batch.map(({ item }) => item[column]))
    const { rows } = await tracked(session.query<{ id: string }>({ text: INSERT_BATCH, values }, timeoutAt))
    const created = new Set(rows.map((row) => row.id))
    const stored = new Map<string, Plant>()
    const existing = batch.filter(({ item }) => !created.has(item.id)).map(({ item }) => item.id)
    // A statement of its own: its snapshot sees the rows that made ON CONFLICT skip these ids. If it fails, they
    // are stored (their insert found them): only whether as this plant is not known.
    const failure = existing.length === 0
      ? undefined
      : await session.query<StoredRow>({ text: SELECT_STORED, values: [existing] }, timeoutAt).then(
        ({ rows }) => { for (const { id, name, tag } of rows) stored.set(id, tag === null ? { name } : { name, tag }) },
        (error: unknown) => new StoreOutcomeUnknownError({ cause: error instanceof Error ? error.cause : error }))
    for (const { item, resolve, reject } of batch) {
      const found = stored.get(item.id)
      // The first insert of an id created it; the later ones compare with it.
      if (created.delete(item.id)) {
        stored.set(item.id, item)
        resolve('created')
      } else if (found !== undefined) resolve(samePlant(found, item) ? 'same' : 'conflict')
      else reject(failure ?? unavailable(`plant ${item.id} not found`))
    }
  }

  return {
    insert (id: PlantId, plant: Plant): Promise<InsertOutcome> {
      const item = { ...plant, id: String(id) }
      // Queued at once when the schema is in place, so an insert made before close() is in its last batch.
      return migrated ? batches.add(item) : whenMigrated().then(() => batches.add(item))
    },
    async ready () {
      await whenMigrated()
      const now = performance.now()
      const oldestStart = writeStarts[0] ?? now
      if (now - oldestStart >= statementTimeoutMs) throw notReady(now)
      if (now - lastOutcomeAt >= FRESH_MS) {
        probe ??= tracked(probeWrites(now + statementTimeoutMs)).catch(noop).finally(() => { probe = undefined })
        const answered = await awaitAtMost(probe.then(() => true), oldestStart + statementTimeoutMs - now)
        if (answered === undefined) throw notReady(performance.now())
      }
      if (writesFailing !== undefined) throw notReady(performance.now())
    },
    stats: session.stats,
    observe: batches.observe,
    async close () {
      if (closed) return
      closed = true
      clearTimeout(retryTimer)
      await Promise.all([migration, batches.close(), probe])
      await session.end()
    }
  }
}
