import pg from 'pg'
import { StoreFullError, StoreOutcomeUnknownError, StoreUnavailableError, WritesFailingError } from '../errors.js'
import type { Plant, PlantId } from '../schemas.js'
import { samePlant, type InsertOutcome, type PlantRepository, type StoreObserver } from './plant-repository.js'
import { createHostPools, parsePostgresUrl } from './postgres-hosts.js'

export interface PostgresPlantRepositoryOptions {
  /**
   * `postgres://…`, to the server or to a pooler in front of it (PgBouncer in transaction or session
   * mode). `?options=-c search_path=<schema>` picks a schema on a direct connection only: poolers refuse it.
   * Several hosts as libpq takes them (`postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write`):
   * tried in order, the first that takes writes is used until it fails (postgres-hosts.ts).
   */
  connectionString: string
  /** Connections of this process (DATABASE_POOL_MAX). Budget them across replicas against the pooler's or server's limit. Default 10. */
  maxConnections?: number
  /** How long to wait for a connection, and for a statement (DATABASE_STATEMENT_TIMEOUT_MS), before answering 503. Default 3000 / 5000 ms. */
  connectionTimeoutMs?: number
  statementTimeoutMs?: number
  /**
   * Named prepared statements (DATABASE_PREPARED_STATEMENTS=on): the server parses and plans the
   * batch insert once per connection instead of once per batch, at the price of a transaction of
   * three messages (the extended protocol cannot carry BEGIN, the timeout and the insert in one).
   * Only where a statement stays on the connection that prepared it: directly, PgBouncer in session
   * mode, or a pooler that tracks them (PgBouncer ≥ 1.21 with max_prepared_statements). Default
   * false: one message per batch, through any pooler.
   */
  preparedStatements?: boolean
  /** With several hosts or a target_session_attrs to check: called with `host:port` each time a host is selected (the log says where writes go). */
  hostSelected?: (host: string) => void
}

/**
 * Versioned schema steps, applied in order under an advisory lock. A step is never edited once
 * released: a change is a new step.
 */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE plants (
     id bigint PRIMARY KEY,
     name text NOT NULL,
     tag text,
     created_at timestamptz NOT NULL DEFAULT now()
   )`
]

/** server_version_num of PostgreSQL 13.0: the oldest server whose statement timeout holds in a batch's message. */
const MIN_SERVER_VERSION = 130000

/** Any constant shared by every replica; serializes their migrations. */
const MIGRATION_LOCK = '7165617846240257'

/** Batches larger than this are split, to bound one statement's size and time. */
const MAX_BATCH = 1000

/**
 * Batches in flight at once. While they run, new inserts queue up and leave together as the next
 * batch: fewer, larger statements cost the server less per row than one statement per request.
 */
const MAX_BATCHES_IN_FLIGHT = 4

// With DATABASE_PREPARED_STATEMENTS=on, one named statement per batch. Ids travel as text and are
// cast to int8 by the server: never a JS number. `id::text` on the way back, so no int8 type parser
// (global or per pool) can round it.
const INSERT_BATCH = `INSERT INTO plants (id, name, tag)
  SELECT id, name, tag FROM unnest($1::int8[], $2::text[], $3::text[]) AS batch (id, name, tag)
  ON CONFLICT (id) DO NOTHING
  RETURNING id::text AS id`
const SELECT_STORED = 'SELECT id::text AS id, name, tag FROM plants WHERE id = ANY ($1::int8[])'

interface Pending {
  key: string
  id: bigint
  plant: Plant
  resolve: (outcome: InsertOutcome) => void
  reject: (error: unknown) => void
}

interface StoredRow {
  id: string
  name: string
  tag: string | null
}

/**
 * Plants in PostgreSQL, shared by every replica. A 200 means committed with the server's default
 * synchronous commit. Starts even when the server is down: the schema step retries with backoff,
 * `ready()` rejects and inserts answer 503 until it is reachable. A failed insert is a
 * StoreUnavailableError (or StoreFullError) only when nothing was stored for sure, and a
 * StoreOutcomeUnknownError when the write was sent and its answer lost (writeFailure below).
 */
export function createPostgresPlantRepository (options: PostgresPlantRepositoryOptions): PlantRepository {
  const statementTimeout = Math.trunc(options.statementTimeoutMs ?? 5000)
  // Only what every pooler passes through (PgBouncer in transaction mode, RDS Proxy, Supavisor…):
  // - no startup parameter but application_name: PgBouncer refuses statement_timeout, options and
  //   the like ("unsupported startup parameter"), so the service would never become ready;
  // - no session state: the timeouts are SET LOCAL inside each transaction (transaction pooling
  //   hands each transaction any server connection, and a session SET would leak to other clients);
  // - no named prepared statement: it lives on one server connection, and the next transaction may
  //   run on another one ("prepared statement … already exists" / "does not exist").
  // Each batch is one message of two statements, the timeout and the insert (oneMessage below).
  const hosts = createHostPools(parsePostgresUrl(options.connectionString), {
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 3000,
    // The client gives up a little after the server should have: covers a black-holed connection
    // (in pipeline mode pg then destroys the connection, and the pool opens a new one).
    query_timeout: statementTimeout + 1000,
    keepAlive: true,
    application_name: 'plant-store',
    // With prepared statements, a transaction's three messages (BEGIN and the timeouts, the
    // statement, COMMIT) leave together: one round trip per batch.
    pipeline: true
  }, options.hostSelected)
  const begin = beginWithTimeouts(statementTimeout)
  const setStatementTimeout = `SET LOCAL statement_timeout = ${statementTimeout}`
  const prepared = options.preparedStatements === true

  /**
   * Runs one statement under the statement timeout as one simple-protocol message:
   * `SET LOCAL statement_timeout = …; <statement>`. PostgreSQL runs the statements of one message
   * as one implicit transaction: committed when the last one succeeds, rolled back when one fails,
   * and the connection is idle again either way (no ROLLBACK to send, nothing a pooler must hold).
   * SET LOCAL holds inside it, and the statement timeout applies to each statement of such a
   * message (PostgreSQL 13 and later), so it bounds the insert. One message out and one reply back
   * per batch: less work for the driver, a pooler and the server than the three messages of an
   * explicit transaction (bench/results/reference.md).
   */
  async function oneMessage<Row extends pg.QueryResultRow> (statement: string): Promise<pg.QueryResult<Row>> {
    const { pool, client } = await acquire()
    client.on('error', ignore)
    let failure: unknown
    try {
      // A message of two statements gives two results: SET's, then the statement's.
      const results = await client.query<Row>(`${setStatementTimeout}; ${statement}`) as unknown as [pg.QueryResult, pg.QueryResult<Row>]
      return results[1]
    } catch (error) {
      failure = error
      // One implicit transaction: a refusal rolled all of it back; anything else may have committed.
      throw writeFailure(error, refusedByServer(error))
    } finally {
      client.removeListener('error', ignore)
      settle(pool, client, failure)
    }
  }

  /** A connection; when there is none, a StoreUnavailableError: nothing was sent, so nothing was stored. */
  async function acquire (): Promise<{ pool: pg.Pool, client: pg.PoolClient }> {
    try {
      return await hosts.connect()
    } catch (error) {
      throw new StoreUnavailableError({ cause: error })
    }
  }

  /**
   * A server's refusal (timeout, lock, constraint) leaves a usable, idle connection. Anything else
   * (reset, read timeout, a pooler's report) may not, and a read-only server (25006: an old primary
   * back as a standby) must not get the next writes: the pool drops that connection, and with several
   * hosts the next batch selects a host again.
   */
  function settle (pool: pg.Pool, client: pg.PoolClient, failure: unknown): void {
    const drop = failure !== undefined && (!serverRefused(failure) || readOnly(failure))
    client.release(drop)
    if (drop) hosts.lost(pool)
  }

  /** The same with a named prepared statement, which needs the extended protocol: BEGIN and the timeouts, the statement, COMMIT, pipelined. */
  async function transaction<Row extends pg.QueryResultRow> (statement: pg.QueryConfig): Promise<pg.QueryResult<Row>> {
    const { pool, client } = await acquire()
    client.on('error', ignore)
    // Every promise is awaited (allSettled), so a statement that fails after the first cannot go unhandled.
    const [opened, result, committed] = await Promise.allSettled([client.query(begin), client.query<Row>(statement), client.query('COMMIT')])
    const failure = [opened, result, committed].find((outcome) => outcome.status === 'rejected')
    client.removeListener('error', ignore)
    // COMMIT of a failed transaction rolls it back: so does a refused COMMIT, unless BEGIN failed
    // (then the statement ran on its own, and may have committed).
    settle(pool, client, failure?.reason)
    if (failure !== undefined) {
      const refused = (result.status === 'rejected' && refusedByServer(result.reason)) ||
        (opened.status === 'fulfilled' && result.status === 'fulfilled' && refusedByServer(failure.reason))
      throw writeFailure(failure.reason, refused)
    }
    return (result as PromiseFulfilledResult<pg.QueryResult<Row>>).value
  }

  let migrated = false
  let closed = false
  let lastError: unknown
  let attempt: Promise<void> | undefined
  let retryTimer: NodeJS.Timeout | undefined
  let retryDelay = 250

  function connect (): void {
    // hosts.connect itself, not acquire: a failure stays the driver's own, the cause ready() reports.
    attempt = migrate(() => hosts.connect(), settle, begin).then(() => {
      migrated = true
      attempt = undefined
    }, (error: unknown) => {
      lastError = error
      attempt = undefined
      if (closed) return
      retryTimer = setTimeout(connect, retryDelay * (0.5 + Math.random()))
      retryDelay = Math.min(retryDelay * 2, 10000)
    })
  }
  connect()

  /** Waits for a schema attempt in progress; rejects while the database has not been reached. */
  async function whenMigrated (): Promise<void> {
    if (closed) throw new StoreUnavailableError()
    if (!migrated && attempt !== undefined) await attempt
    if (!migrated) throw new StoreUnavailableError({ cause: lastError })
  }

  let queue: Pending[] = []
  let scheduled = false
  const inFlight = new Set<Promise<void>>()
  let observer: StoreObserver | undefined

  function schedule (): void {
    if (scheduled || queue.length === 0 || inFlight.size >= MAX_BATCHES_IN_FLIGHT) return
    scheduled = true
    // setImmediate runs after the poll phase: every request read in this turn joins the batch.
    setImmediate(dispatch)
  }

  function dispatch (): void {
    scheduled = false
    while (queue.length > 0 && inFlight.size < MAX_BATCHES_IN_FLIGHT) {
      const batch = queue.slice(0, MAX_BATCH)
      queue = queue.slice(MAX_BATCH)
      observer?.batch(batch.length)
      const running: Promise<void> = run(batch).finally(() => {
        inFlight.delete(running)
        schedule()
      })
      inFlight.add(running)
    }
  }

  function enqueue (id: PlantId, plant: Plant): Promise<InsertOutcome> {
    if (closed) return Promise.reject(new StoreUnavailableError())
    // Validation refuses NUL (schemas.ts); were one to come here anyway, it is refused alone rather
    // than failing its whole batch (PostgreSQL text cannot hold it, and a message cannot carry it).
    if (plant.name.includes('\0') || plant.tag?.includes('\0') === true) return Promise.reject(new TypeError('a plant\'s text holds a NUL character'))
    const big = BigInt(id)
    return new Promise<InsertOutcome>((resolve, reject) => {
      queue.push({ key: big.toString(), id: big, plant, resolve, reject })
      schedule()
    })
  }

  // Writes that fail with no success since (readiness): when the first of them was sent.
  let lastSuccess = performance.now()
  let failingSince: number | undefined
  let probe: Promise<void> | undefined

  /**
   * What an insert needs, without inserting: the table's insert lock (a migration or a stuck
   * transaction holding the table times it out) and a commit that writes (an xid: refused by a
   * read-only server, and waits for a synchronous standby as an insert's commit does). While
   * readiness is 503 the load balancer sends no creates: this is how it learns that writes work again.
   */
  function probeWrites (): void {
    probe ??= oneMessage('LOCK TABLE plants IN ROW EXCLUSIVE MODE; SELECT pg_current_xact_id()').then(() => {
      lastSuccess = performance.now()
      failingSince = undefined
    }, ignore).finally(() => { probe = undefined })
  }

  /** Inserts a batch as if its inserts ran one after another in arrival order. Never rejects. */
  async function run (batch: Pending[]): Promise<void> {
    const started = performance.now()
    // The first insert of an id is the one that can create it; later ones compare with what is stored.
    const firsts = new Map<string, Pending>()
    for (const pending of batch) if (!firsts.has(pending.key)) firsts.set(pending.key, pending)
    // Rows in id order, so concurrent batches (other replicas) take row locks in one order: no deadlock.
    const rows = [...firsts.values()].sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
    let created: Set<string>
    try {
      const result = prepared
        ? await transaction<{ id: string }>({
          name: 'plants-insert-batch',
          text: INSERT_BATCH,
          values: [rows.map((row) => row.key), rows.map((row) => row.plant.name), rows.map((row) => row.plant.tag ?? null)]
        })
        : await oneMessage<{ id: string }>(insertStatement(rows))
      created = new Set(result.rows.map((row) => row.id))
      lastSuccess = performance.now()
      failingSince = undefined
    } catch (error) {
      failingSince ??= Math.max(started, lastSuccess)
      // oneMessage and transaction name their failures; anything else is not known to have failed.
      const failure = error instanceof StoreUnavailableError || error instanceof StoreFullError || error instanceof StoreOutcomeUnknownError
        ? error
        : new StoreOutcomeUnknownError({ cause: error })
      for (const pending of batch) pending.reject(failure)
      return
    }

    const stored = new Map<string, Plant>()
    for (const key of created) stored.set(key, (firsts.get(key) as Pending).plant)
    const others = [...firsts.keys()].filter((key) => !created.has(key))
    let failure: Error | undefined
    if (others.length > 0) {
      try {
        // A separate statement: its snapshot sees the rows other transactions committed meanwhile,
        // which is what made ON CONFLICT skip these ids.
        const result = prepared
          ? await transaction<StoredRow>({ name: 'plants-select-stored', text: SELECT_STORED, values: [others] })
          : await oneMessage<StoredRow>(`SELECT id::text AS id, name, tag FROM plants WHERE id IN (${others.join(', ')})`)
        for (const row of result.rows) stored.set(row.id, row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag })
      } catch (error) {
        // These ids are stored (their insert found them): only whether as this plant is not known.
        failure = new StoreOutcomeUnknownError({ cause: (error as { cause?: unknown }).cause ?? error })
      }
    }
    for (const pending of batch) {
      const plant = stored.get(pending.key)
      if (created.has(pending.key) && firsts.get(pending.key) === pending) pending.resolve('created')
      else if (plant !== undefined) pending.resolve(samePlant(plant, pending.plant) ? 'same' : 'conflict')
      else pending.reject(failure ?? new StoreUnavailableError({ cause: new Error(`plant ${pending.key} neither inserted nor found`) }))
    }
  }

  return {
    insert (id: PlantId, plant: Plant) {
      // Queued at once when the schema is in place, so an insert made before close() is in the batch that close() waits for.
      return migrated && !closed ? enqueue(id, plant) : whenMigrated().then(() => enqueue(id, plant))
    },
    async ready () {
      await whenMigrated()
      try {
        await oneMessage('SELECT 1')
      } catch (error) {
        throw error instanceof StoreUnavailableError ? error : new StoreUnavailableError({ cause: (error as { cause?: unknown }).cause ?? error })
      }
      // Reads can work while writes cannot (a synchronous standby gone: commits wait).
      const failing = failingSince === undefined ? 0 : performance.now() - failingSince
      if (failing > statementTimeout) {
        probeWrites()
        throw new WritesFailingError(String(Math.round(failing)))
      }
    },
    stats: () => {
      const { total, idle, waiting } = hosts.stats()
      return { poolConnections: total, poolIdleConnections: idle, poolWaitingRequests: waiting }
    },
    observe (next) { observer = next },
    async close () {
      if (closed) return
      closed = true
      clearTimeout(retryTimer)
      await attempt
      while (queue.length > 0 || inFlight.size > 0) {
        dispatch()
        await Promise.allSettled([...inFlight])
      }
      await probe
      await hosts.end()
    }
  }
}

/**
 * The batch's insert with its values as SQL literals, for oneMessage (the simple protocol has no
 * parameters): each id is a BigInt's decimal text, each name and tag goes through pg's
 * escapeLiteral (quotes and backslashes doubled, an E'' literal when there is a backslash, so it
 * reads the same whatever standard_conforming_strings says), and enqueue refuses NUL. `id::text`
 * on the way back, so no int8 type parser (global or per pool) can round it.
 */
function insertStatement (rows: readonly Pending[]): string {
  let values = ''
  for (const { key, plant } of rows) {
    values += `${values === '' ? '' : ', '}(${key}, ${pg.escapeLiteral(plant.name)}, ${plant.tag === undefined ? 'NULL' : pg.escapeLiteral(plant.tag)})`
  }
  return `INSERT INTO plants (id, name, tag) VALUES ${values} ON CONFLICT (id) DO NOTHING RETURNING id::text AS id`
}

/** A checked-out client reports a lost connection as an event too; the query's rejection carries it. */
function ignore (): void {}

/**
 * Opens a transaction with the timeouts as SET LOCAL: they end with it, so they hold through a
 * pooler in transaction mode and never leak to another client of the same server connection.
 */
function beginWithTimeouts (ms: number): string {
  return `BEGIN; SET LOCAL statement_timeout = ${ms}; SET LOCAL idle_in_transaction_session_timeout = ${ms}`
}

/**
 * Brings the schema to the newest version. The advisory lock makes replicas starting together take
 * turns; it is transaction-scoped (released by COMMIT), so it works through transaction pooling too.
 */
async function migrate (
  acquire: () => Promise<{ pool: pg.Pool, client: pg.PoolClient }>,
  settle: (pool: pg.Pool, client: pg.PoolClient, failure: unknown) => void,
  begin: string
): Promise<void> {
  const { pool, client } = await acquire()
  client.on('error', ignore)
  let failure: unknown
  try {
    await client.query(begin)
    // Before 13, PostgreSQL timed a message of several statements as a whole, from before its SET
    // LOCAL: a batch's statement timeout would not hold (oneMessage). Refused, with the reason.
    const server = await client.query<{ version: number, text: string }>("SELECT current_setting('server_version_num')::int AS version, current_setting('server_version') AS text")
    assertSupportedServer(server.rows[0])
    await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK])
    // Looked up before it is created: CREATE … IF NOT EXISTS is refused by a read-only server even
    // when the table exists, and a schema already up to date needs no write (a replica that starts on
    // a read-only server is ready for reads; its creates answer 503 and readiness says so).
    const known = await client.query<{ found: boolean }>("SELECT to_regclass('plant_store_migrations') IS NOT NULL AS found")
    if (known.rows[0]?.found !== true) {
      await client.query('CREATE TABLE IF NOT EXISTS plant_store_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())')
    }
    const { rows } = await client.query<{ version: number }>('SELECT coalesce(max(version), 0)::int AS version FROM plant_store_migrations')
    const current = rows[0]?.version ?? 0
    if (current > MIGRATIONS.length) throw new Error(`schema version ${current} is newer than this release knows (${MIGRATIONS.length})`)
    for (let version = current + 1; version <= MIGRATIONS.length; version++) {
      await client.query(MIGRATIONS[version - 1] as string)
      await client.query('INSERT INTO plant_store_migrations (version) VALUES ($1)', [version])
    }
    await client.query('COMMIT')
  } catch (error) {
    // Dropped even after a server's refusal: the transaction may still be open.
    failure = new Error('migration failed', { cause: error })
    await client.query('ROLLBACK').catch(() => {})
    throw error
  } finally {
    client.removeListener('error', ignore)
    settle(pool, client, failure)
  }
}

/** Throws, naming the server's version, unless it is PostgreSQL 13 or later (server_version_num, server_version). */
export function assertSupportedServer (server: { version: number, text: string } | undefined): void {
  if (server === undefined || !(server.version >= MIN_SERVER_VERSION)) {
    throw new Error(`PostgreSQL 13 or later is needed; the server is ${server?.text ?? 'of an unknown version'}`)
  }
}

/**
 * SQLSTATE classes of a server's refusal after which nothing of the statement's transaction is
 * committed: data (22), constraint (23), transaction state (25, with 25006 read-only), rollback (40:
 * serialization, deadlock), syntax and access (42), check option (44), resources (53: disk full, out
 * of memory), limits (54), object state (55: 55P03 lock not available); and 57014, a statement
 * timeout or cancel. Not class 08 (what PgBouncer reports when the server connection broke, whatever
 * the server did), 57P01-57P05 (a shutdown or a crash, possibly after the commit), XX or 58.
 */
const REFUSED = /^(?:2[235]|4[024]|5[345])[0-9A-Z]{3}$|^57014$/

/**
 * PgBouncer's own errors for a query it never passed to a server: it had no server connection to give
 * it (PgBouncer's check_fast_fail, the wait for a server, a failed server login). It closes the client
 * connection after them.
 */
const POOLER_NEVER_SENT = /^(?:query_wait_timeout|pgbouncer cannot connect to server|server login has been failing, try again later \(server_login_retry\))$/

/** The server answered the statement with an error that rolled it back, and the connection is usable. */
function serverRefused (error: unknown): boolean {
  return error instanceof pg.DatabaseError && REFUSED.test(error.code ?? '')
}

/**
 * True when nothing was stored for sure: the server refused the statement, a pooler never passed it
 * on, or pg refused to send it ("… is not queryable", raised before anything is written).
 */
function refusedByServer (error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return serverRefused(error) || POOLER_NEVER_SENT.test(error.message)
  return error instanceof Error && / is not queryable$/.test(error.message)
}

/** 25006: the server is (now) read-only, an old primary that came back as a standby. */
function readOnly (error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === '25006'
}

/**
 * The named error for a write that failed: disk_full is a 507; a refusal (nothing stored) a 503 the
 * client may retry; anything else after the write was sent (a connection reset or ended by a crash,
 * a read timeout while the commit waits for a synchronous standby) a 503 whose outcome is unknown.
 */
function writeFailure (error: unknown, refused: boolean): Error {
  if (!refused) return new StoreOutcomeUnknownError({ cause: error })
  if ((error as { code?: unknown }).code === '53100') return new StoreFullError({ cause: error })
  return new StoreUnavailableError({ cause: error })
}
