import pg from 'pg'
import { parsePostgresUrl } from '../plants/postgres-session.js'
import type { BulkStore, Row } from './store.js'

// One statement a batch: what it inserts is committed together. It answers the ids it did not insert (stored
// already, or by another writer meanwhile), which a second statement, with a newer snapshot, then reads.
const INSERT = 'WITH stored AS (INSERT INTO plants (id, name, tag) SELECT * FROM unnest($1::int8[], $2::text[], ' +
  '$3::text[]) ORDER BY 1 ON CONFLICT (id) DO NOTHING RETURNING id) SELECT u.id::text AS id ' +
  'FROM unnest($1::int8[]) AS u (id) WHERE NOT EXISTS (SELECT FROM stored WHERE stored.id = u.id)'
const FIND = 'SELECT id::text AS id, name, tag FROM plants WHERE id = ANY ($1::int8[])'
const WRITABLE = 'SELECT NOT pg_is_in_recovery() AND NOT current_setting(\'transaction_read_only\')::bool AS ok'

/** One connection to the first host of DATABASE_URL that answers (and takes writes when target_session_attrs asks). */
export async function openPostgres (url: string): Promise<BulkStore> {
  const { hosts, attrs } = parsePostgresUrl(url)
  const reasons: string[] = []
  for (const host of hosts) {
    const client = new pg.Client({ connectionString: host.url, application_name: 'plant-store' })
    // A lost connection also fails the statement in flight, which reports it.
    client.on('error', () => {})
    try {
      await client.connect()
      if (attrs === 'any' || (await client.query<{ ok: boolean }>(WRITABLE)).rows[0]?.ok === true) return bulk(client)
      reasons.push(`${host.label} takes no writes`)
    } catch (error) {
      reasons.push(`${host.label}: ${(error as Error).message}`)
    }
    await client.end().catch(() => {})
  }
  throw new Error(`DATABASE_URL: no host could be used (${reasons.join('; ')})`)
}

function bulk (client: pg.Client): BulkStore {
  const find = async (ids: string[]): Promise<Row[]> => (await client.query<Row>(FIND, [ids])).rows
  return {
    async * plants () {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
      await client.query('DECLARE plants_out NO SCROLL CURSOR FOR ' +
        'SELECT id::text AS id, name, tag FROM plants ORDER BY id')
      for (let rows; (rows = (await client.query<Row>('FETCH 5000 FROM plants_out')).rows).length > 0;) yield rows
      await client.query('COMMIT')
    },
    async insert (rows) {
      const values = [rows.map((row) => String(row.id)), rows.map((row) => row.name), rows.map((row) => row.tag)]
      const skipped = (await client.query<{ id: string }>(INSERT, values)).rows.map((row) => row.id)
      return skipped.length === 0 ? [] : await find(skipped)
    },
    find,
    close: () => client.end()
  }
}
