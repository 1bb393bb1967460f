import type pg from 'pg'

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
   )`,
  // One row, rewritten by the readiness probe (postgres-readiness.ts): a write that goes through WAL
  // and a synchronous commit as a create does, without adding a plant.
  `CREATE TABLE plant_store_heartbeat (
     id boolean PRIMARY KEY DEFAULT true CHECK (id),
     written_at timestamptz NOT NULL
   )`
]

/** The readiness probe's write: the table's insert lock (as an insert takes it), then the heartbeat row. */
export const HEARTBEAT = 'LOCK TABLE plants IN ROW EXCLUSIVE MODE; ' +
  'INSERT INTO plant_store_heartbeat (id, written_at) VALUES (true, now()) ON CONFLICT (id) DO UPDATE SET written_at = excluded.written_at'

/** server_version_num of PostgreSQL 13.0: the oldest server whose statement timeout holds in a batch's message. */
const MIN_SERVER_VERSION = 130000

/** Any constant shared by every replica; serializes their migrations. */
const MIGRATION_LOCK = '7165617846240257'

function ignore (): void {}

/**
 * Brings the schema to the newest version. The advisory lock makes replicas starting together take
 * turns; it is transaction-scoped (released by COMMIT), so it works through transaction pooling too.
 */
export async function migrate (
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
    // a read-only server starts; its creates answer 503 and readiness says so).
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
