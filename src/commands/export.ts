import { createWriteStream, renameSync } from 'node:fs'
import { dirname } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { fsync, lineOf, type BulkStore } from './store.js'

/** Every plant, one JSON line each, from one snapshot, streamed; a file is written whole under a temporary name. */
export async function exportPlants (store: BulkStore, to: string | undefined): Promise<number> {
  let count = 0
  const text = async function * () {
    for await (const page of store.plants()) {
      count += page.length
      yield page.map((row) => lineOf(row) + '\n').join('')
    }
  }
  const out = to === undefined ? process.stdout : createWriteStream(`${to}.partial`, { flush: true })
  await pipeline(text, out, { end: to !== undefined })
  if (to !== undefined) {
    renameSync(`${to}.partial`, to)
    fsync(dirname(to))
  }
  process.stderr.write(`exported ${count} plants\n`)
  return 0
}
