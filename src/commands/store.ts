import { renameSync, rmSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { dirname } from 'node:path'
import { plantId, type NewPlant } from '../schemas.js'

/** A plant as the commands move it: the id exact (as the store or the parser gives it), no tag as null. */
export interface Row { id: number | bigint | string, name: string, tag: string | null }

/**
 * A store in bulk, on one connection (sqlite-bulk.ts, postgres-bulk.ts). plants(): every plant in id order, from one
 * snapshot, a page at a time (PAGE at most); insert(rows): stores each row whose id is free (the first of an id) in
 * one durable commit, and says how many; stored(rows): the plant under each row's id, if any.
 */
export interface BulkStore {
  plants: () => AsyncGenerator<Row[]>
  insert: (rows: Row[]) => Promise<number>
  stored: (rows: Row[]) => Promise<Array<Row | undefined>>
  close: () => Promise<void>
}

// A page of an export, or a batch of an import or verify, ends at this many plants or bytes, whichever comes first:
// memory stays flat for plants of any size the API takes (BODY_LIMIT up to 1 MiB).
export const PAGE = { rows: 10000, bytes: 1 << 20 }

/** A plant's line in an export (without its newline). */
export const lineOf = ({ id, name, tag }: Row): string =>
  `{"id":${id},"name":${JSON.stringify(name)}${tag === null ? '' : `,"tag":${JSON.stringify(tag)}`}}`

// An export line (lineOf) whose name and tag hold no quote, backslash, control character or U+FFFD (a bad byte):
// read by this pattern at a third of the JSON parser's cost, then checked by the schema. Others go to the parser.
const PLAIN_LINE = /^\{"id":(-?[1-9]\d{0,18}|0),"name":"([^"\\\p{Cc}\uFFFD]*)"(?:,"tag":"([^"\\\p{Cc}\uFFFD]*)")?\}$/u

/** The plant of an export line as parseBody gives it (the id in plantId's form), or undefined. */
export function plainLine (text: string): NewPlant | undefined {
  const [, digits = '', name, tag] = PLAIN_LINE.exec(text) ?? []
  if (name === undefined) return undefined
  const id = plantId(BigInt(digits))
  return tag === undefined ? { id, name } : { id, name, tag }
}

/** Rows as a JSON array of their export lines, for a store to read in one statement: ids exact, a missing tag NULL. */
export const json = (rows: Row[]): string => `[${rows.map(lineOf).join(',')}]`

export const kindOf = (row: Row, now: Row | undefined) =>
  now === undefined ? 'new' : now.name === row.name && now.tag === row.tag ? 'same' : 'other'

const fsync = (name: string): Promise<void> => open(name).then((file) => file.sync().finally(() => file.close()))

/**
 * Writes a file whole or not at all: `write` fills FILE.partial (a leftover removed first), which is flushed to the
 * disk and renamed, then its folder flushed (a rename is durable once its folder is); on a failure, it is removed.
 */
export async function writeWhole (file: string, write: (partial: string) => Promise<unknown>): Promise<void> {
  const partial = `${file}.partial`
  rmSync(partial, { force: true })
  await write(partial).then(() => fsync(partial)).then(() => { renameSync(partial, file) })
    .finally(() => { rmSync(partial, { force: true }) })
  await fsync(dirname(file))
}
