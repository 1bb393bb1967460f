import { isStoreError, StoreOutcomeUnknownError, StoreUnavailableError } from '../errors.js'
import type { Plant, PlantId } from '../schemas.js'
import { createGroupCommit, type Pending } from './group-commit.js'
import { samePlant, type InsertOutcome, type PlantRepository } from './plant-repository.js'
import { createHostPools, parsePostgresUrl } from './postgres-hosts.js'
import { HEARTBEAT, migrate } from './postgres-migrations.js'
import { createWriteHealth } from './postgres-readiness.js'
import { createSession } from './postgres-session.js'
import { INSERT_BATCH, insertStatement, SELECT_STORED, selectStored, type Row } from './postgres-statements.js'

export { assertSupportedServer } from './postgres-migrations.js'

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
  /**
   * The statement timeout (DATABASE_STATEMENT_TIMEOUT_MS, default 5000 ms): the server's, per
   * transaction; every insert is answered within it + 1 s, whatever is stuck (postgres-session.ts).
   */
  statementTimeoutMs?: number
  /** How long a new connection may take to open (each host of a multi-host URL). Default: the statement timeout. */
  connectionTimeoutMs?: number
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

/** Batches larger than this are split, to bound one statement's size and time. */
const MAX_BATCH = 1000

/**
 * Batches in flight at once (fewer when the pool is smaller). While they run, new inserts queue up and
 * leave together as the next batch: fewer, larger statements cost the server less per row.
 */
const MAX_BATCHES_IN_FLIGHT = 4

/**
 * An insert is answered within the statement timeout plus this (in all, less than the documented
 * + 1 s: the rest is for the HTTP reply). Queued that long behind stuck batches, it is refused
 * unsent (503, nothing stored) at the statement timeout; sent, it is cancelled 400 ms (CANCEL_LEAD_MS)
 * before its deadline, so the cancel's answer says what happened.
 */
const ANSWER_MARGIN_MS = 600

type Entry = Pending<Row, InsertOutcome>

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
 * StoreOutcomeUnknownError when the write was sent and its answer lost (postgres-failures.ts).
 * Every insert is answered within the statement timeout + ANSWER_MARGIN_MS.
 */
export function createPostgresPlantRepository (options: PostgresPlantRepositoryOptions): PlantRepository {
  const statementTimeout = Math.trunc(options.statementTimeoutMs ?? 5000)
  const answerWithin = statementTimeout + ANSWER_MARGIN_MS
  const maxConnections = options.maxConnections ?? 10
  // Only what every pooler passes through (PgBouncer in transaction mode, RDS Proxy, Supavisor…):
  // - no startup parameter but application_name: PgBouncer refuses statement_timeout, options and
  //   the like ("unsupported startup parameter"), so the service would never become ready;
  // - no session state: the timeouts are SET LOCAL inside each transaction (transaction pooling
  //   hands each transaction any server connection, and a session SET would leak to other clients);
  // - no named prepared statement: it lives on one server connection, and the next transaction may
  //   run on another one ("prepared statement … already exists" / "does not exist").
  // No query_timeout: the session's deadline cancels a statement instead of dropping its connection.
  const hosts = createHostPools(parsePostgresUrl(options.connectionString), {
    max: maxConnections,
    connectionTimeoutMillis: Math.trunc(options.connectionTimeoutMs ?? statementTimeout),
    keepAlive: true,
    application_name: 'plant-store',
    // With prepared statements, a transaction's three messages (BEGIN and the timeouts, the
    // statement, COMMIT) leave together: one round trip per batch.
    pipeline: true
  }, options.hostSelected)
  const session = createSession(hosts, statementTimeout)
  const prepared = options.preparedStatements === true
  const health = createWriteHealth({
    statementTimeoutMs: statementTimeout,
    probe: () => session.oneMessage(HEARTBEAT, performance.now() + answerWithin)
  })

  let migrated = false
  let closed = false
  let lastError: unknown
  let attempt: Promise<void> | undefined
  let retryTimer: NodeJS.Timeout | undefined
  let retryDelay = 250

  function connect (): void {
    // hosts.connect itself: a failure stays the driver's own, the cause ready() reports.
    attempt = migrate(() => hosts.connect(), session.settle, `BEGIN; SET LOCAL statement_timeout = ${statementTimeout}`).then(() => {
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

  /**
   * Waits for a schema attempt in progress (an insert at most `ms`, so that its answer keeps its
   * bound; each of the attempt's steps has the statement or connect timeout); rejects while the
   * database has not been reached.
   */
  async function whenMigrated (ms = Infinity): Promise<void> {
    if (closed) throw new StoreUnavailableError()
    if (!migrated && attempt !== undefined) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([attempt, ...(ms === Infinity ? [] : [new Promise((resolve) => { timer = setTimeout(resolve, ms) })])])
      clearTimeout(timer)
    }
    if (!migrated) throw new StoreUnavailableError({ cause: lastError })
  }

  const batches = createGroupCommit<Row, InsertOutcome>({
    commit: run,
    maxBatch: MAX_BATCH,
    maxInFlight: Math.min(MAX_BATCHES_IN_FLIGHT, maxConnections),
    // Queued behind stuck batches for the statement timeout: refused unsent, nothing stored.
    maxQueueMs: statementTimeout,
    expired: () => new StoreUnavailableError({ cause: new Error(`timed out after ${statementTimeout} ms queued behind batches the database has not answered`) }),
    closed: () => new StoreUnavailableError()
  })

  function enqueue (id: PlantId, plant: Plant): Promise<InsertOutcome> {
    // Validation refuses NUL (schemas.ts); were one to come here anyway, it is refused alone rather
    // than failing its whole batch (PostgreSQL text cannot hold it, and a message cannot carry it).
    if (plant.name.includes('\0') || plant.tag?.includes('\0') === true) return Promise.reject(new TypeError('a plant\'s text holds a NUL character'))
    const big = BigInt(id)
    return batches.add({ key: big.toString(), id: big, plant })
  }

  /** Inserts a batch as if its inserts ran one after another in arrival order. Never rejects. */
  async function run (batch: Entry[]): Promise<void> {
    const deadline = (batch[0] as Entry).queuedAt + answerWithin
    // The first insert of an id is the one that can create it; later ones compare with what is stored.
    const firsts = new Map<string, Entry>()
    for (const pending of batch) if (!firsts.has(pending.item.key)) firsts.set(pending.item.key, pending)
    // Rows in id order, so concurrent batches (other replicas) take row locks in one order: no deadlock.
    const rows = [...firsts.values()].map((pending) => pending.item).sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
    let created: Set<string>
    try {
      const result = await health.track(() => prepared
        ? session.transaction<{ id: string }>({
          name: 'plants-insert-batch',
          text: INSERT_BATCH,
          values: [rows.map((row) => row.key), rows.map((row) => row.plant.name), rows.map((row) => row.plant.tag ?? null)]
        }, deadline)
        : session.oneMessage<{ id: string }>(insertStatement(rows), deadline))
      created = new Set(result.rows.map((row) => row.id))
    } catch (error) {
      // The session names its failures; anything else is not known to have failed.
      const failure = isStoreError(error) ? error : new StoreOutcomeUnknownError({ cause: error })
      for (const pending of batch) pending.reject(failure)
      return
    }

    const stored = new Map<string, Plant>()
    for (const key of created) stored.set(key, (firsts.get(key) as Entry).item.plant)
    const others = [...firsts.keys()].filter((key) => !created.has(key))
    let failure: Error | undefined
    if (others.length > 0) {
      try {
        // A separate statement: its snapshot sees the rows other transactions committed meanwhile,
        // which is what made ON CONFLICT skip these ids.
        const result = prepared
          ? await session.transaction<StoredRow>({ name: 'plants-select-stored', text: SELECT_STORED, values: [others] }, deadline)
          : await session.oneMessage<StoredRow>(selectStored(others), deadline)
        for (const row of result.rows) stored.set(row.id, row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag })
      } catch (error) {
        // These ids are stored (their insert found them): only whether as this plant is not known.
        failure = new StoreOutcomeUnknownError({ cause: (error as { cause?: unknown }).cause ?? error })
      }
    }
    for (const pending of batch) {
      const plant = stored.get(pending.item.key)
      if (created.has(pending.item.key) && firsts.get(pending.item.key) === pending) pending.resolve('created')
      else if (plant !== undefined) pending.resolve(samePlant(plant, pending.item.plant) ? 'same' : 'conflict')
      else pending.reject(failure ?? new StoreUnavailableError({ cause: new Error(`plant ${pending.item.key} neither inserted nor found`) }))
    }
  }

  return {
    insert (id: PlantId, plant: Plant) {
      // Queued at once when the schema is in place, so an insert made before close() is in the batch that close() waits for.
      return migrated && !closed ? enqueue(id, plant) : whenMigrated(statementTimeout).then(() => enqueue(id, plant))
    },
    async ready () {
      await whenMigrated()
      await health.ready()
    },
    stats: () => {
      const { total, idle, waiting } = hosts.stats()
      return { poolConnections: total, poolIdleConnections: idle, poolWaitingRequests: waiting }
    },
    observe (next) { batches.observe(next) },
    async close () {
      if (closed) return
      closed = true
      clearTimeout(retryTimer)
      await attempt
      await batches.close()
      await health.idle()
      await session.close()
      await hosts.end()
    }
  }
}
