import { hash } from 'node:crypto'

/** A plant as the commands move it: the id exact (as the store or the parser gives it), no tag as null. */
export interface Row { id: number | bigint | string, name: string, tag: string | null }

/** A store in bulk, on one connection. */
export interface BulkStore {
  /** Every plant in id order, from one snapshot, a page at a time. */
  plants (): AsyncIterable<Row[]>
  /** Stores each row whose id is free (the first of an id) in one durable commit; returns how many. */
  insert (rows: Row[]): Promise<number>
  find (ids: string[]): Promise<Row[]>
  close (): Promise<void>
}

/** A plant's line in an export (without its newline). */
export const lineOf = ({ id, name, tag }: Row): string =>
  `{"id":${id},"name":${JSON.stringify(name)}${tag === null ? '' : `,"tag":${JSON.stringify(tag)}`}}`

/** A plant's share of a checksum: summed over plants, it does not depend on their order. */
export const digest = (row: Row): bigint => hash('sha256', lineOf(row), 'buffer').readBigUInt64BE(0)
