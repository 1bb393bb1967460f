import { createReadStream, statSync } from 'node:fs'
import { PlantConflictError } from '../errors.js'
import { parseBody } from '../plugins/json-body.js'
import { NewPlant } from '../schemas.js'
import { validatorCompiler } from '../validation.js'
import { digest, hex, lineOf, sameRow, type BulkStore, type Row } from './store.js'

interface Entry { line: number, key: string, row: Row }
type Report = (line: number, message: string) => void
const validate = validatorCompiler({ schema: NewPlant, method: 'POST', url: '/plants', httpPart: 'body' })

/**
 * The plants of JSON Lines in batches, each line read as POST /plants reads a body (BODY_LIMIT, strict UTF-8,
 * exact int64 ids, the same validation); a refused line is reported with the API's message.
 */
async function * batches (input: AsyncIterable<Buffer>, limit: number, at: Record<'bytes' | 'read' | 'refused', number>,
  report: Report): AsyncGenerator<Entry[]> {
  const batch: Entry[] = []
  let line = 0
  const take = (text: Buffer): void => {
    line++
    at.bytes += text.length + 1
    if (text.length === 0) return
    at.read++
    try {
      if (text.length > limit) throw new Error(`body must not be larger than ${limit} bytes`)
      const { value, error } = validate(parseBody(text, undefined, limit)) as { value?: NewPlant, error?: Error }
      if (value === undefined) throw error
      batch.push({ line, key: String(value.id), row: { id: value.id, name: value.name, tag: value.tag ?? null } })
    } catch (error) {
      at.refused++
      report(line, (error as Error).message)
    }
  }
  let rest: Buffer = Buffer.alloc(0)
  for await (const chunk of input) {
    const data = rest.length === 0 ? chunk : Buffer.concat([rest, chunk])
    let start = 0
    for (let end; (end = data.indexOf(10, start)) !== -1; start = end + 1) take(data.subarray(start, end))
    // A line past the limit is refused whatever follows: only its first bytes are kept, so memory stays flat.
    rest = data.subarray(start, start + limit + 1)
    if (batch.length >= 10000) yield batch.splice(0)
  }
  if (rest.length > 0) take(rest)
  yield batch
}

/**
 * Each plant of the input against the store: `new` (its id is free; with `write`, now stored), `same`, or `other`
 * (another plant under its id, never overwritten). A batch commits whole: an import killed at any moment and run
 * again stores every plant once. On a terminal, progress: plants, plants per second, time left for a file.
 */
async function replay (store: BulkStore, from: string | undefined, limit: number, write: boolean, report: Report) {
  const tally = { new: 0, same: 0, other: 0, read: 0, refused: 0, bytes: 0, sum: 0n }
  const [size, started] = [from === undefined ? NaN : statSync(from).size, performance.now()]
  if (process.stderr.isTTY) {
    setInterval(() => {
      const seconds = (performance.now() - started) / 1000
      const left = Number.isNaN(size) ? '' : `, ${Math.round((size - tally.bytes) * seconds / tally.bytes)} s left`
      process.stderr.write(`\r${tally.read} plants, ${Math.round(tally.read / seconds)}/s${left}   `)
    }, 1000).unref()
  }
  async function compare (batch: Entry[]): Promise<void> {
    // The first line of an id in a batch is the one that may store it; later ones compare with what is stored.
    const firsts = new Map<string, Entry>()
    for (const entry of batch) if (!firsts.has(entry.key)) firsts.set(entry.key, entry)
    const rows = [...firsts.values()].map((entry) => entry.row)
    const stored = new Map((await (write ? store.insert(rows) : store.find([...firsts.keys()])))
      .map((row) => [String(row.id), row]))
    for (const { line, key, row } of batch) {
      const first = firsts.get(key)
      const now = stored.get(key) ?? (write && first?.line !== line ? first?.row : undefined)
      const kind = now === undefined ? 'new' : sameRow(now, row) ? 'same' : 'other'
      tally[kind]++
      if (!write) tally.sum += digest(row)
      if (kind === 'other' || (kind === 'new' && !write)) {
        report(line, write
          ? new PlantConflictError(key).message
          : `id ${key} is ${now === undefined ? 'not stored' : `stored as ${lineOf(now)}`}`)
      }
    }
  }
  // One batch in the store while the next is read and validated.
  let previous = Promise.resolve()
  const input = from === undefined ? process.stdin : createReadStream(from)
  for await (const batch of batches(input, limit, tally, report)) {
    await previous
    previous = compare(batch)
    previous.catch(() => {})
  }
  await previous
  if (process.stderr.isTTY) process.stderr.write('\n')
  return tally
}

export async function importPlants (store: BulkStore, from: string | undefined, limit: number): Promise<number> {
  const t = await replay(store, from, limit, true, (line, text) => { process.stderr.write(`line ${line}: ${text}\n`) })
  await store.close()
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
