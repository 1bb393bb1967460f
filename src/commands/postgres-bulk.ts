import { finished } from 'node:stream/promises'
import pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'
import { noop, parsePostgresUrl } from '../sql/postgres-hosts.js'
import { lineOf, type BulkStore, type Row } from './store.js'

// The rows as the export's JSON lines: ids exact, a missing tag NULL.
const INSERT = 'INSERT INTO plants (id, name, tag) SELECT id, name, tag ' +
  'FROM json_populate_recordset(NULL::plants, $1) ON CONFLICT (id) DO NOTHING'
// The stored plants of a batch's ids, one probe of the primary key each (LIMIT 1 keeps it so): as a join or with
// `= ANY`, the planner scanned the whole table for every batch of a growing, not yet analyzed table.
const FIND = 'SELECT u.id::text AS id, p.name, p.tag FROM unnest($1::int8[]) AS u (id), ' +
  'LATERAL (SELECT name, tag FROM plants WHERE plants.id = u.id LIMIT 1) AS p'
const WRITABLE = 'SELECT NOT pg_is_in_recovery() AND NOT current_setting(\'transaction_read_only\')::bool AS ok'
const csv = (text: string): string => `"${text.replaceAll('"', '""')}"`

/** One connection to the first host of DATABASE_URL that answers (and takes writes when target_session_attrs asks). */
export async function openStore (url: string): Promise<BulkStore> {
  const { hosts, attrs } = parsePostgresUrl(url)
  const reasons: string[] = []
  for (const host of hosts) {
    // A lost connection also fails the statement in flight, which reports it.
    const client = new pg.Client({ connectionString: host.url, application_name: 'plant-store' }).on('error', noop)
    try {
      await client.connect()
      if (attrs === 'any' || (await client.query<{ ok: boolean }>(WRITABLE)).rows[0]?.ok === true) return bulk(client)
      reasons.push(`${host.label} takes no writes`)
    } catch (error) {
      reasons.push(`${host.label}: ${(error as Error).message}`)
    }
    await client.end().catch(noop)
  }
  throw new Error(`DATABASE_URL: no host could be used (${reasons.join('; ')})`)
}

function bulk (client: pg.Client): BulkStore {
  return {
    async * plants () {
      // A cursor reads one snapshot, taken when it is declared, a page at a time.
      await client.query('BEGIN READ ONLY; DECLARE plants_out CURSOR FOR SELECT id, name, tag FROM plants ORDER BY id')
      for (let rows; (rows = (await client.query<Row>('FETCH 5000 FROM plants_out')).rows).length > 0;) yield rows
      await client.query('COMMIT')
    },
    async insert (rows) {
      // COPY first, all an empty table needs (PostgreSQL's fastest way in); an id stored already fails it whole
      // (23505), and INSERT … ON CONFLICT, which costs more per plant, stores the rest.
      const copy = client.query(copyFrom('COPY plants (id, name, tag) FROM STDIN (FORMAT csv)'))
      copy.end(rows.map((row) => `${row.id},${csv(row.name)},${row.tag === null ? '' : csv(row.tag)}\n`).join(''))
      return await finished(copy).then(() => copy.rowCount, async (error: unknown) => {
        if ((error as { code?: string }).code !== '23505') throw error
        return (await client.query(INSERT, [`[${rows.map(lineOf).join(',')}]`])).rowCount ?? 0
      })
    },
    find: async (ids) => (await client.query<Row>(FIND, [ids])).rows,
    close: () => client.end()
  }
}
