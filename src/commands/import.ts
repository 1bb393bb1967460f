import { createReadStream, statSync } from 'node:fs'
import { PlantConflictError } from '../errors.js'
import { plantBatches, type Entry, type Position } from './lines.js'
import { sameRow, type BulkStore, type Row } from './store.js'

/**
 * JSON Lines into the store under the replay contract: a free id is stored, the identical plant is present, another
 * plant under a stored id is a conflict, never overwritten. Batches commit whole, so a run killed at any moment
 * and run again stores every plant once. Returns the exit status: 1 when a line was refused or a conflict.
 */
export async function importPlants (store: BulkStore, from: string | undefined, limit: number): Promise<number> {
  const counts = { read: 0, stored: 0, present: 0, conflicts: 0, refused: 0 }
  const report = (line: number, message: string): void => { process.stderr.write(`line ${line}: ${message}\n`) }
  const at: Position = { bytes: 0, read: 0 }
  const stopProgress = progress(at, from === undefined ? undefined : statSync(from).size)

  async function commit (batch: Entry[]): Promise<void> {
    // The first line of an id in the batch is the one that may store it; later ones compare with what is stored.
    const firsts = new Map<string, Entry>()
    for (const entry of batch) if (!firsts.has(entry.key)) firsts.set(entry.key, entry)
    const stored = new Map<string, Row>()
    const existing = await store.insert([...firsts.values()].map((entry) => entry.row))
    for (const row of existing) stored.set(String(row.id), row)
    for (const entry of batch) {
      const found = stored.get(entry.key) ?? (firsts.get(entry.key) === entry ? undefined : firsts.get(entry.key)?.row)
      if (found === undefined) counts.stored++
      else if (sameRow(found, entry.row)) counts.present++
      else {
        counts.conflicts++
        report(entry.line, new PlantConflictError(entry.key).message)
      }
    }
  }

  const input = from === undefined ? process.stdin : createReadStream(from)
  // One batch in the store while the next is read and validated.
  let previous: Promise<void> = Promise.resolve()
  try {
    for await (const batch of plantBatches(input, limit, 10000, (line, message) => {
      counts.refused++
      report(line, message)
    }, at)) {
      await previous
      previous = commit(batch)
      previous.catch(() => {})
    }
    await previous
  } finally {
    stopProgress()
  }
  counts.read = at.read
  process.stdout.write(Object.entries(counts).map(([name, count]) => `${name} ${count}`).join(', ') + '\n')
  return counts.conflicts + counts.refused === 0 ? 0 : 1
}

/** On a terminal, plants read, plants per second and, when the size is known, the time left; off one, nothing. */
function progress (at: Position, size: number | undefined): () => void {
  if (process.stderr.isTTY !== true) return () => {}
  const started = performance.now()
  const timer = setInterval(() => {
    const seconds = (performance.now() - started) / 1000
    const left = size === undefined ? '' : `, ${Math.round((size - at.bytes) * seconds / at.bytes)} s left`
    process.stderr.write(`\r${at.read} plants, ${Math.round(at.read / seconds)}/s${left}   `)
  }, 1000)
  return () => {
    clearInterval(timer)
    process.stderr.write('\n')
  }
}
