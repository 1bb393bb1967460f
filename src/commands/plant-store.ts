#!/usr/bin/env -S node --max-semi-space-size=4
// V8's young generation grows to 32 MiB semi-spaces under an import's garbage: 4 MiB keeps RSS well under 150 MB.
import { createReadStream, createWriteStream, renameSync, statSync } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import { parseArgs } from 'node:util'
import { readEnv } from '../config/env.js'
import { parseBody } from '../plugins/json-body.js'
import { NewPlant } from '../schemas.js'
import { createRepository } from '../storage.js'
import { validatorCompiler } from '../validation.js'
import { digest, lineOf, type BulkStore, type Row } from './store.js'

const USAGE = 'usage: plant-store export [--to FILE] | import [--from FILE] | backup FILE | verify --from FILE'
const validate = validatorCompiler({ schema: NewPlant, method: 'POST', url: '/plants', httpPart: 'body' })
const hex = (sum: bigint): string => BigInt.asUintN(64, sum).toString(16).padStart(16, '0')

/** Every plant, one JSON line each, from one snapshot, streamed; a file gets its name only once complete. */
async function exportPlants (store: BulkStore, to: string | undefined): Promise<number> {
  let count = 0
  async function * text () {
    for await (const page of store.plants()) {
      count += page.length
      yield page.map((row) => lineOf(row) + '\n').join('')
    }
  }
  await pipeline(text, to === undefined ? process.stdout : createWriteStream(`${to}.partial`))
  if (to !== undefined) renameSync(`${to}.partial`, to)
  process.stderr.write(`exported ${count} plants\n`)
  return 0
}

/**
 * import (`write`) or verify: each plant of the input against the store: `new` (its id is free; with `write`, now
 * stored), `same`, or `other` (another plant under its id, never overwritten). A batch commits whole: an import
 * killed at any moment and run again stores every plant once.
 */
async function replay (store: BulkStore, from: string | undefined, limit: number, write: boolean): Promise<number> {
  const t = { new: 0, same: 0, other: 0, read: 0, refused: 0, bytes: 0, sum: 0n }
  const progress = process.stderr.isTTY && setInterval(() => {
    const seconds = process.uptime()
    const left = from === undefined ? '' : `, ${Math.round((statSync(from).size - t.bytes) * seconds / t.bytes)} s left`
    process.stderr.write(`\r${t.read} plants, ${Math.round(t.read / seconds)}/s${left}   `)
  }, 1000).unref()
  // import reports every refused line and conflict; verify, the first ten differences (each counted before).
  const report = (line: number, message: string): void => {
    if (write || t.new + t.other + t.refused <= 10) process.stderr.write(`line ${line}: ${message}\n`)
  }
  const batch: Array<Row & { line: number }> = []
  async function compare (rows: typeof batch): Promise<void> {
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
      if (kind !== 'same') report(row.line, `id ${row.id} is ${now ? `stored as ${lineOf(now)}` : 'not stored'}`)
    }
  }
  // A line read as POST /plants reads a body (BODY_LIMIT, strict UTF-8, exact int64 ids, the same validation); a
  // refused line is reported with the API's message.
  function check (text: Buffer, line: number): void {
    const body = text.at(-1) === 13 ? text.subarray(0, -1) : text
    if (body.length === 0) return
    t.read++
    try {
      if (body.length > limit) throw new Error('Request body is too large')
      const { value, error } = validate(parseBody(body, undefined, limit)) as { value?: NewPlant, error?: Error }
      if (value === undefined) throw error
      batch.push({ line, id: value.id, name: value.name, tag: value.tag ?? null })
    } catch (error) {
      t.refused++
      report(line, (error as Error).message)
    }
  }
  // Lines end at \n (a \r before it is dropped); of a line past BODY_LIMIT, only enough to refuse it is kept. One
  // batch is in the store while the next is read and checked.
  let [rest, line, pending] = [Buffer.alloc(0), 0, Promise.resolve()]
  for await (const chunk of from === undefined ? process.stdin : createReadStream(from)) {
    t.bytes += chunk.length
    const data = Buffer.concat([rest, chunk])
    let start = 0
    for (let end; (end = data.indexOf(10, start)) !== -1; start = end + 1) {
      check(data.subarray(start, end), ++line)
      if (batch.length < 10000) continue
      await pending
      pending = compare(batch.splice(0))
      pending.catch(() => {})
    }
    rest = data.subarray(start, start + limit + 2)
  }
  check(rest, ++line)
  await pending
  await compare(batch)
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
  process.stdout.write(`export: ${t.new + t.same + t.other} plants, checksum ${hex(t.sum)}\n` +
    `store: ${kept.count} plants, checksum ${hex(kept.sum)}\n` +
    `identical ${t.same}, missing ${t.new}, differing ${t.other}, refused ${t.refused}\n`)
  return t.new + t.other + t.refused === 0 ? 0 : 1
}

/** The exit status: 0 done; 1 a line refused, a conflict or a difference; 2 the command could not run. */
async function main ([command = '', ...args]: string[]): Promise<number> {
  const options = { to: { type: 'string' }, from: { type: 'string' } } as const
  const { values, positionals: [file], tokens } = parseArgs({ args, options, allowPositionals: true, tokens: true })
  const form = [command, ...tokens.map((token) => token.kind === 'option' ? `--${token.name}` : 'FILE')].join(' ')
  if (!/^(?:export(?: --to)?|import(?: --from)?|verify --from|backup FILE)$/.test(form)) throw new Error(USAGE)
  const { DATABASE_URL: url, BODY_LIMIT: limit } = readEnv(process.env)
  if (url === 'memory:') throw new Error('DATABASE_URL: memory: lives in the service; use sqlite:<path> or postgres://')
  const sqlite = url.startsWith('sqlite:')
  if (command === 'backup' && !sqlite) throw new Error('backup copies a SQLite store; for PostgreSQL, use pg_dump')
  if (command === 'backup') return (await import('./sqlite-bulk.js')).backupSqlite(url, file as string)
  const write = command === 'import'
  if (write) {
    // The schema brought up to date first, as the service does.
    const repository = await createRepository({ DATABASE_URL: url, MAX_PLANTS: 1 })
    await repository.ready().finally(() => repository.close())
  }
  // Any other scheme goes to PostgreSQL's URL parser, which refuses it in one line naming DATABASE_URL.
  const bulk = sqlite ? await import('./sqlite-bulk.js') : await import('./postgres-bulk.js')
  const store = await bulk.openStore(url, write)
  const run = command === 'export' ? exportPlants(store, values.to) : replay(store, values.from, limit, write)
  return await run.finally(() => store.close())
}

main(process.argv.slice(2)).then((status) => { process.exitCode = status }, (error: Error) => {
  process.stderr.write(`plant-store: ${error.message}\n`)
  process.exitCode = 2
})
