import { createReadStream } from 'node:fs'
import { plantBatches } from './lines.js'
import { digest, hex, lineOf, sameRow, type BulkStore } from './store.js'

const SHOWN = 10

/**
 * Whether every plant of an export is stored identically: the count and checksum of each side (a sum over plants,
 * whatever their order), then the first differences. Returns 1 when a plant is missing, differs or is refused.
 */
export async function verify (store: BulkStore, from: string, limit: number): Promise<number> {
  const file = { count: 0, sum: 0n }
  const differences = { missing: 0, differing: 0, refused: 0 }
  let shown = 0
  const show = (line: number, message: string): void => {
    if (shown++ < SHOWN) process.stdout.write(`line ${line}: ${message}\n`)
  }
  const refuse = (line: number, message: string): void => {
    differences.refused++
    show(line, message)
  }
  for await (const batch of plantBatches(createReadStream(from), limit, 5000, refuse)) {
    const stored = new Map((await store.find(batch.map((entry) => entry.key))).map((row) => [String(row.id), row]))
    for (const { line, key, row } of batch) {
      file.count++
      file.sum += digest(row)
      const found = stored.get(key)
      if (found === undefined) {
        differences.missing++
        show(line, `id ${key} is not stored`)
      } else if (!sameRow(found, row)) {
        differences.differing++
        show(line, `id ${key} is stored as ${lineOf(found)}`)
      }
    }
  }
  const kept = { count: 0, sum: 0n }
  for await (const page of store.plants()) {
    for (const row of page) {
      kept.count++
      kept.sum += digest(row)
    }
  }
  process.stdout.write(`export: ${file.count} plants, checksum ${hex(file.sum)}\n` +
    `store: ${kept.count} plants, checksum ${hex(kept.sum)}\n` +
    Object.entries(differences).map(([name, count]) => `${name} ${count}`).join(', ') + '\n')
  return differences.missing + differences.differing + differences.refused === 0 ? 0 : 1
}
