import { finished } from 'node:stream/promises'
import { from as copyFrom } from 'pg-copy-streams'
import { createHosts, noop } from '../sql/postgres-hosts.js'
import { json, PAGE, type BulkStore, type Row } from './store.js'

const INSERT = 'INSERT INTO plants (id, name, tag) SELECT id, name, tag ' +
  'FROM json_populate_recordset(NULL::plants, $1) ON CONFLICT (id) DO NOTHING'
// What is stored under each id of a batch, one probe of the primary key each (LIMIT 1 keeps it so): as a join or
// with `= ANY`, the planner scanned the whole table for every batch of a growing, not yet analyzed table.
const STORED = 'SELECT p.id::text, p.name, p.tag FROM json_populate_recordset(NULL::plants, $1) WITH ORDINALITY AS u ' +
  'LEFT JOIN LATERAL (SELECT id, name, tag FROM plants WHERE plants.id = u.id LIMIT 1) AS p ON true ORDER BY ordinality'
// A page from id $1 on: PAGE.rows at most, ending with the plant that reaches $2 bytes (sizes read, not values).
const SIZE = 'octet_length(name) + coalesce(octet_length(tag), 0)'
const PAGE_FROM = `SELECT id::text, name, tag FROM (SELECT id, name, tag, sum(${SIZE}) OVER (ORDER BY id) - ${SIZE}` +
  ` AS before FROM plants WHERE id >= $1 ORDER BY id LIMIT ${PAGE.rows}) AS page WHERE before < $2 ORDER BY page.id`
const csv = (text: string): string => `"${text.replaceAll('"', '""')}"`

/**
 * One connection, to the host the service would choose (target_session_attrs); connecting and each statement wait
 * `ms` at most: a server that stops answering ends the command.
 */
export async function openStore (url: string, ms: number): Promise<BulkStore> {
  const hosts = createHosts(url, { connectionTimeoutMillis: ms, query_timeout: ms, max: 1 }, { info: noop, warn: noop })
  const { client } = await hosts.connect().catch(async (error: unknown) => {
    await hosts.end()
    throw new Error(`DATABASE_URL: ${hosts.inUse()?.label ?? 'no host could be used'}`, { cause: error })
  })
  return {
    async * plants () {
      // Every page from one snapshot, taken by the first.
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
      for (let from = -(2n ** 63n), rows; from < 2n ** 63n; from = BigInt((rows.at(-1) as Row).id) + 1n) {
        if ((rows = (await client.query<Row>(PAGE_FROM, [from, PAGE.bytes])).rows).length === 0) break
        yield rows
      }
      await client.query('COMMIT')
    },
    async insert (rows) {
      // COPY first, all an empty table needs (PostgreSQL's fastest way in); an id stored already fails it whole
      // (23505), and INSERT … ON CONFLICT, which costs more per plant, stores the rest.
      const copy = client.query(copyFrom('COPY plants (id, name, tag) FROM STDIN (FORMAT csv)'))
      copy.end(rows.map((row) => `${row.id},${csv(row.name)},${row.tag === null ? '' : csv(row.tag)}\n`).join(''))
      return await finished(copy).then(() => copy.rowCount, async (error: unknown) => {
        if ((error as { code?: string }).code !== '23505') throw error
        return (await client.query(INSERT, [json(rows)])).rowCount ?? 0
      })
    },
    stored: async (rows) => (await client.query<Row>(STORED, [json(rows)])).rows.map((row) => row.id ? row : undefined),
    close: async () => {
      client.release(true)
      await hosts.end()
    }
  }
}
