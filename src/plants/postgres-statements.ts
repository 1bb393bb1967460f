import pg from 'pg'
import type { Plant } from '../schemas.js'

/** One row of a batch: the id as a BigInt and as its decimal text (the key). */
export interface Row {
  key: string
  id: bigint
  plant: Plant
}

// With DATABASE_PREPARED_STATEMENTS=on, one named statement per batch. Ids travel as text and are
// cast to int8 by the server: never a JS number. `id::text` on the way back, so no int8 type parser
// (global or per pool) can round it.
export const INSERT_BATCH = `INSERT INTO plants (id, name, tag)
  SELECT id, name, tag FROM unnest($1::int8[], $2::text[], $3::text[]) AS batch (id, name, tag)
  ON CONFLICT (id) DO NOTHING
  RETURNING id::text AS id`
export const SELECT_STORED = 'SELECT id::text AS id, name, tag FROM plants WHERE id = ANY ($1::int8[])'

/**
 * The batch's insert with its values as SQL literals, for oneMessage (the simple protocol has no
 * parameters): each id is a BigInt's decimal text, each name and tag goes through pg's
 * escapeLiteral (quotes and backslashes doubled, an E'' literal when there is a backslash, so it
 * reads the same whatever standard_conforming_strings says), and enqueue refuses NUL. `id::text`
 * on the way back, so no int8 type parser (global or per pool) can round it.
 */
export function insertStatement (rows: readonly Row[]): string {
  let values = ''
  for (const { key, plant } of rows) {
    values += `${values === '' ? '' : ', '}(${key}, ${pg.escapeLiteral(plant.name)}, ${plant.tag === undefined ? 'NULL' : pg.escapeLiteral(plant.tag)})`
  }
  return `INSERT INTO plants (id, name, tag) VALUES ${values} ON CONFLICT (id) DO NOTHING RETURNING id::text AS id`
}

/** The stored plants of these ids (decimal texts of checked integers), for oneMessage. */
export function selectStored (keys: readonly string[]): string {
  return `SELECT id::text AS id, name, tag FROM plants WHERE id IN (${keys.join(', ')})`
}
