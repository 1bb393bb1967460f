import { createReadStream, statSync } from 'node:fs'
import { PlantConflictError } from '../errors.js'
import { parseBody } from '../plugins/json-body.js'
import { NewPlant } from '../schemas.js'
import { validatorCompiler } from '../validation.js'
import { digest, lineOf, type BulkStore, type Row } from './store.js'

type Line = Row & { line: number }
const validate = validatorCompiler({ schema: NewPlant, method: 'POST', url: '/plants', httpPart: 'body' })

/**
 * import (`write`) or verify: each plant of the input against the store: `new` (its id is free; with `write`, now
 * stored), `same`, or `other` (another plant under its id, never overwritten). A batch commits whole: an import
 * killed at any moment and run again stores every plant once. On a terminal, progress: plants, plants per second,
 * time left for a file. import ends with a summary line; verify with each side's count and checksum.
 */
export async function replay (store: BulkStore, from: string | undefined, limit: number, write: boolean) {
  const t = { new: 0, same: 0, other: 0, read: 0, refused: 0, bytes: 0, sum: 0n }
  const [size, started] = [from === undefined ? NaN : statSync(from).size, performance.now()]
  const progress = process.stderr.isTTY && setInterval(() => {
    const seconds = (performance.now() - started) / 1000
    const left = Number.isNaN(size) ? '' : `, ${Math.round((size - t.bytes) * seconds / t.bytes)} s left`
    process.stderr.write(`\r${t.read} plants, ${Math.round(t.read / seconds)}/s${left}   `)
  }, 1000).unref()
  let shown = 0
  const report = (line: number, message: string): void => {
    if (write || shown++ < 10) (write ? process.stderr : process.stdout).write(`line ${line}: ${message}\n`)
  }
  async function compare (rows: Line[]): Promise<void> {
    const added = write ? await store.insert(rows) : 0
    t.new += added
    if (added === rows.length) return
    // Each line against what is stored now: its id stored before, or by an earlier line of the batch, holds the
    // same or another plant. The plants just stored are counted as same below, so they are taken off.
    const stored = new Map((await store.find(rows.map((row) => String(row.id)))).map((row) => [String(row.id), row]))
    t.same -= added
    for (const row of rows) {
      const now = stored.get(String(row.id))
      const kind = now === undefined ? 'new' : now.name === row.name && now.tag === row.tag ? 'same' : 'other'
      t[kind]++
      if (!write) t.sum += digest(row)
      if (kind !== 'same') {
        report(row.line, write
          ? new PlantConflictError(String(row.id)).message
          : `id ${row.id} is ${now === undefined ? 'not stored' : `stored as ${lineOf(now)}`}`)
      }
    }
  }
  // One batch in the store while the next is read and checked.
  let [batch, previous] = [[] as Line[], Promise.resolve()]
  async function flush (): Promise<void> {
    await previous
    previous = compare(batch.splice(0))
    previous.catch(() => {})
  }
  // A line read as POST /plants reads a body (BODY_LIMIT, strict UTF-8, exact int64 ids, the same validation); a
  // refused line is reported with the API's message.
  function check (text: Buffer, line: number): void {
    const body = text.at(-1) === 13 ? text.subarray(0, -1) : text
    if (body.length === 0) return
    t.read++
    try {
      if (body.length > limit) throw new Error(`body must not be larger than ${limit} bytes`)
      const { value, error } = validate(parseBody(body, undefined, limit)) as { value?: NewPlant, error?: Error }
      if (value === undefined) throw error
      batch.push({ line, id: value.id, name: value.name, tag: value.tag ?? null })
    } catch (error) {
      t.refused++
      report(line, (error as Error).message)
    }
  }
  // Lines end at \n (a \r before it is dropped); of a line past BODY_LIMIT, only enough to refuse it is kept.
  let [rest, line] = [Buffer.alloc(0), 0]
  for await (const chunk of from === undefined ? process.stdin : createReadStream(from)) {
    t.bytes += chunk.length
    const data = Buffer.concat([rest, chunk])
    let start = 0
    for (let end; (end = data.indexOf(10, start)) !== -1; start = end + 1) {
      check(data.subarray(start, end), ++line)
      if (batch.length === 10000) await flush()
    }
    rest = data.subarray(start, start + limit + 2)
  }
  check(rest, ++line)
  await flush()
  await previous
  if (progress) process.stderr.write('\n')
  if (write) {
    process.stdout.write(`read ${t.read}, stored ${t.new}, present ${t.same}, conflicts ${t.other}, ` +
      `refused ${t.refused}\n`)
    return t.other + t.refused === 0 ? 0 : 1
  }
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
