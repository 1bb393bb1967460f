import { createWriteStream, renameSync } from 'node:fs'
import { dirname } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { fsync } from './sqlite-bulk.js'
import { lineOf, type BulkStore } from './store.js'

/**
 * Every plant, one JSON line each, from one snapshot, streamed: to standard output, or to a file written under a
 * temporary name and renamed once complete.
 */
export async function exportPlants (store: BulkStore, to: string | undefined): Promise<number> {
  let count = 0
  async function * text () {
    for await (const page of store.plants()) {
      count += page.length
      yield page.map((row) => lineOf(row) + '\n').join('')
    }
  }
  if (to === undefined) await pipeline(text, process.stdout, { end: false })
  else {
    await pipeline(text, createWriteStream(`${to}.partial`, { flush: true }))
    renameSync(`${to}.partial`, to)
    fsync(dirname(to))
  }
  process.stderr.write(`exported ${count} plants\n`)
  return 0
}
