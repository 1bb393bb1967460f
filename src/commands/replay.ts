import { on, once } from 'node:events'
import { createReadStream, statSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { parentPort, Worker, type MessagePort } from 'node:worker_threads'
import { PlantConflictError } from '../errors.js'
import { parseBody } from '../plugins/json-body.js'
import { NewPlant } from '../schemas.js'
import { validatorCompiler } from '../validation.js'
import { digest, lineOf, type BulkStore, type Row } from './store.js'

/** Up to 10,000 valid lines with their line numbers, and what the reader saw besides. */
interface Batch { lines: number[], rows: Row[], refused: Array<[number, string]>, bytes: number, last: boolean }
const empty = (): Batch => ({ lines: [], rows: [], refused: [], bytes: 0, last: false })
export interface Reading { from: string | undefined, limit: number }

/**
 * In a worker thread, one batch ahead of the store: each line read as POST /plants reads a body (BODY_LIMIT,
 * strict UTF-8, exact int64 ids, the same validation). Latin-1 gives back each line's bytes as they were.
 */
export async function readBatches ({ from, limit }: Reading): Promise<void> {
  const validate = validatorCompiler({ schema: NewPlant, method: 'POST', url: '/plants', httpPart: 'body' })
  const [port, input] = [parentPort as MessagePort, from === undefined ? process.stdin : createReadStream(from)]
  let [batch, line] = [empty(), 0]
  for await (const text of createInterface({ input: input.setEncoding('latin1'), crlfDelay: Infinity })) {
    line++
    batch.bytes += text.length + 1
    if (text === '') continue
    try {
      if (text.length > limit) throw new Error(`body must not be larger than ${limit} bytes`)
      const body = parseBody(Buffer.from(text, 'latin1'), undefined, limit)
      const { value, error } = validate(body) as { value?: NewPlant, error?: Error }
      if (value === undefined) throw error
      batch.rows.push({ id: String(value.id), name: value.name, tag: value.tag ?? null })
      batch.lines.push(line)
    } catch (error) {
      batch.refused.push([line, (error as Error).message])
    }
    if (batch.rows.length < 10000) continue
    port.postMessage(batch)
    batch = empty()
    await once(port, 'message')
  }
  port.postMessage({ ...batch, last: true })
}

/**
 * Each plant of the input against the store: `new` (its id is free; with `write`, now stored), `same`, or `other`
 * (another plant under its id, never overwritten). A batch commits whole: an import killed at any moment and run
 * again stores every plant once. On a terminal, progress: plants, plants per second, time left for a file.
 */
async function replay (store: BulkStore, from: string | undefined, limit: number, write: boolean,
  report: (line: number, message: string) => void) {
  const tally = { new: 0, same: 0, other: 0, read: 0, refused: 0, bytes: 0, sum: 0n }
  const [size, started] = [from === undefined ? NaN : statSync(from).size, performance.now()]
  const show = (): void => {
    const seconds = (performance.now() - started) / 1000
    const left = Number.isNaN(size) ? '' : `, ${Math.round((size - tally.bytes) * seconds / tally.bytes)} s left`
    process.stderr.write(`\r${tally.read} plants, ${Math.round(tally.read / seconds)}/s${left}   `)
  }
  const progress = process.stderr.isTTY ? setInterval(show, 1000) : undefined
  // The entry script again, as the reader (plant-store.ts).
  const worker = new Worker(process.argv[1] as string, { workerData: { from, limit }, stdin: from === undefined })
  if (from === undefined) process.stdin.pipe(worker.stdin as NodeJS.WritableStream)
  try {
    for await (const [batch] of on(worker, 'message') as AsyncIterable<[Batch]>) {
      worker.postMessage('next')
      tally.read += batch.rows.length + batch.refused.length
      tally.bytes += batch.bytes
      for (const [line, message] of batch.refused) report(line, message)
      tally.refused += batch.refused.length
      // The first line of an id is the one that may store it; later ones compare with what is stored.
      const firsts = new Map<string, Row>()
      for (const row of batch.rows) if (!firsts.has(row.id as string)) firsts.set(row.id as string, row)
      const added = write ? await store.insert([...firsts.values()]) : 0
      // Each line against what is stored now; the plants just stored count as same below, then as new.
      const stored = added === firsts.size
        ? firsts
        : new Map((await store.find([...firsts.keys()])).map((row) => [String(row.id), row]))
      tally.new += added
      tally.same -= added
      batch.rows.forEach((row, index) => {
        const now = stored.get(row.id as string)
        const kind = now === undefined ? 'new' : now.name === row.name && now.tag === row.tag ? 'same' : 'other'
        tally[kind]++
        if (!write) tally.sum += digest(row)
        if (kind !== 'same') {
          report(batch.lines[index] as number, write
            ? new PlantConflictError(String(row.id)).message
            : `id ${row.id} is ${now === undefined ? 'not stored' : `stored as ${lineOf(now)}`}`)
        }
      })
      if (batch.last) break
    }
  } finally {
    clearInterval(progress)
    await worker.terminate()
    if (from === undefined) process.stdin.destroy()
  }
  if (progress !== undefined) process.stderr.write('\n')
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
  const hex = (sum: bigint): string => BigInt.asUintN(64, sum).toString(16).padStart(16, '0')
  process.stdout.write(`export: ${t.new + t.same + t.other} plants, checksum ${hex(t.sum)}\n` +
    `store: ${kept.count} plants, checksum ${hex(kept.sum)}\n` +
    `identical ${t.same}, missing ${t.new}, differing ${t.other}, refused ${t.refused}\n`)
  return t.new + t.other + t.refused === 0 ? 0 : 1
}
