import { createReadStream, statSync } from 'node:fs'
import { PlantConflictError } from '../errors.js'
import { plantBatches, type Entry, type Position } from './lines.js'
import { digest, hex, lineOf, sameRow, type BulkStore } from './store.js'

type Report = (line: number, message: string) => void

/**
 * Each plant of a JSON Lines input compared with the store: `new` (its id is free; with `write`, now stored), `same`
 * or `other` (another plant under its id, never overwritten). A batch commits whole, so an import killed at any
 * moment and run again stores every plant once.
 */
async function replay (store: BulkStore, from: string | undefined, limit: number, write: boolean, report: Report) {
  const tally = { new: 0, same: 0, other: 0, refused: 0, sum: 0n }
  const at: Position = { bytes: 0, read: 0 }
  progress(at, from === undefined ? undefined : statSync(from).size)
  async function compare (batch: Entry[]): Promise<void> {
    // The first line of an id in a batch is the one that may store it; later ones compare with what is stored.
    const firsts = new Map<string, Entry>()
    for (const entry of batch) if (!firsts.has(entry.key)) firsts.set(entry.key, entry)
    const rows = [...firsts.values()].map((entry) => entry.row)
    const found = await (write ? store.insert(rows) : store.find([...firsts.keys()]))
    const stored = new Map(found.map((row) => [String(row.id), row]))
    for (const entry of batch) {
      const first = firsts.get(entry.key)
      const now = stored.get(entry.key) ?? (write && first !== entry ? first?.row : undefined)
      const kind = now === undefined ? 'new' : sameRow(now, entry.row) ? 'same' : 'other'
      tally[kind]++
      if (!write) tally.sum += digest(entry.row)
      if (kind === 'other' || (kind === 'new' && !write)) {
        report(entry.line, now === undefined
          ? `id ${entry.key} is not stored`
          : write ? new PlantConflictError(entry.key).message : `id ${entry.key} is stored as ${lineOf(now)}`)
      }
    }
  }
  const refuse: Report = (line, message) => {
    tally.refused++
    report(line, message)
  }
  // One batch in the store while the next is read and validated.
  let previous = Promise.resolve()
  const input = from === undefined ? process.stdin : createReadStream(from)
  for await (const batch of plantBatches(input, limit, refuse, at)) {
    await previous
    previous = compare(batch)
    previous.catch(() => {})
  }
  await previous
  if (process.stderr.isTTY) process.stderr.write('\n')
  return { ...tally, read: at.read }
}

export async function importPlants (store: BulkStore, from: string | undefined, limit: number): Promise<number> {
  const t = await replay(store, from, limit, true, (line, text) => { process.stderr.write(`line ${line}: ${text}\n`) })
  process.stdout.write(`read ${t.read}, stored ${t.new}, present ${t.same}, conflicts ${t.other}, ` +
    `refused ${t.refused}\n`)
  return t.other + t.refused === 0 ? 0 : 1
}

/** Whether every plant of an export is stored identically: each side's count and checksum, the first differences. */
export async function verify (store: BulkStore, from: string, limit: number): Promise<number> {
  let shown = 0
  const t = await replay(store, from, limit, false, (line, message) => {
    if (shown++ < 10) process.stdout.write(`line ${line}: ${message}\n`)
  })
  const kept = { count: 0, sum: 0n }
  for await (const page of store.plants()) {
    kept.count += page.length
    for (const row of page) kept.sum += digest(row)
  }
  process.stdout.write(`export: ${t.new + t.same + t.other} plants, checksum ${hex(t.sum)}\n` +
    `store: ${kept.count} plants, checksum ${hex(kept.sum)}\n` +
    `identical ${t.same}, missing ${t.new}, differing ${t.other}, refused ${t.refused}\n`)
  return t.new + t.other + t.refused === 0 ? 0 : 1
}

/** On a terminal, plants read, plants per second and, when the size is known, the time left; off one, nothing. */
function progress (at: Position, size: number | undefined): void {
  if (process.stderr.isTTY !== true) return
  const started = performance.now()
  setInterval(() => {
    const seconds = (performance.now() - started) / 1000
    const left = size === undefined ? '' : `, ${Math.round((size - at.bytes) * seconds / at.bytes)} s left`
    process.stderr.write(`\r${at.read} plants, ${Math.round(at.read / seconds)}/s${left}   `)
  }, 1000).unref()
}
