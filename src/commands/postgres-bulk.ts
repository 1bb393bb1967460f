import pg from 'pg'
import { parsePostgresUrl } from '../plants/postgres-session.js'
import type { BulkStore, Row } from './store.js'

// The stored plants of a batch's ids, one probe of the primary key each (LIMIT 1 keeps it so): as a join or with
// `= ANY`, the planner scanned the whole table for every batch of a growing, not yet analyzed table.
const FOUND = 'SELECT u.id, p.name, p.tag FROM unnest($1::int8[]) AS u (id), ' +
  'LATERAL (SELECT name, tag FROM plants WHERE plants.id = u.id LIMIT 1) AS p'
// One statement a batch, committed whole: it inserts the plants whose id it does not find and answers those it
// found. No ON CONFLICT, which costs three times as much: a plant stored by another writer meanwhile fails it
// (23505), and it runs again.
const INSERT = `WITH found AS (${FOUND}), stored AS (INSERT INTO plants (id, name, tag) SELECT * FROM ` +
  'unnest($1::int8[], $2::text[], $3::text[]) AS t (id) WHERE t.id NOT IN (SELECT id FROM found) ORDER BY 1) ' +
  'SELECT id::text AS id, name, tag FROM found'
const FRESH = 'INSERT INTO plants (id, name, tag) SELECT * FROM unnest($1::int8[], $2::text[], $3::text[])'
const FIND = `SELECT id::text AS id, name, tag FROM (${FOUND}) AS found`
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
  return {
    async * plants () {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
      await client.query('DECLARE plants_out NO SCROLL CURSOR FOR ' +
        'SELECT id::text AS id, name, tag FROM plants ORDER BY plants.id')
      for (let rows; (rows = (await client.query<Row>('FETCH 5000 FROM plants_out')).rows).length > 0;) yield rows
      await client.query('COMMIT')
    },
    async insert (rows) {
      const values = [rows.map((row) => String(row.id)), rows.map((row) => row.name), rows.map((row) => row.tag)]
      // First as into an empty table, without a lookup; an id stored already fails it whole, and the lookup runs.
      for (let text = FRESH; ; text = INSERT) {
        const result = await client.query<Row>(text, values).catch((error: unknown) => {
          if ((error as { code?: string }).code !== '23505') throw error
        })
        if (result !== undefined) return result.rows
      }
    },
    find: async (ids) => (await client.query<Row>(FIND, [ids])).rows,
    // pg's end() resolves at once on a client already ended.
    close: () => client.end()
  }
}
