#!/usr/bin/env -S node --max-semi-space-size=8 --max-old-space-size=64
// V8 lets its heap grow far past what a command holds (a page or two, PAGE): a 64 MiB old generation makes it collect
// first (1 MB plants move in under 160 MB of RSS); 8 MiB semi-spaces halve 4 MiB's young collections (16 MiB: 156 MB).
import { createReadStream, createWriteStream, readFileSync, statSync } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import { parseArgs } from 'node:util'
import { readEnv } from '../config/env.js'
import { parseBody } from '../plugins/json-body.js'
import { NewPlant } from '../schemas.js'
import { createRepository } from '../storage.js'
import { validatorCompiler } from '../validation.js'
import { kindOf, lineOf, PAGE, plainLine, writeWhole, type BulkStore, type Row } from './store.js'

const USAGE = 'usage: plant-store export [--to FILE|-] | import [--from FILE|-] | verify --from FILE|- | backup FILE\n'
const FORMS = /^(?:export(?: --to)?|import(?: --from)?|verify --from|backup FILE)$/
const [string, flag] = [{ type: 'string' }, { type: 'boolean' }] as const
const OPTIONS = { to: string, from: string, help: { ...flag, short: 'h' }, version: flag } as const
const validate = validatorCompiler({ schema: NewPlant, method: 'POST', url: '/plants', httpPart: 'body' })

/** Every plant, one JSON line each, from one snapshot, streamed; a file is named only once complete and flushed. */
async function exportPlants (store: BulkStore, to: string | undefined): Promise<number> {
  let count = 0
  async function * text () {
    for await (const page of store.plants()) {
      count += page.length
      yield page.map((row) => lineOf(row) + '\n').join('')
    }
  }
  if (to === undefined) await pipeline(text, process.stdout)
  else await writeWhole(to, (partial) => pipeline(text, createWriteStream(partial)))
  process.stderr.write(`exported ${count} plants\n`)
  return 0
}

/**
 * import (`write`) or verify: each plant of the input against the store: `new` (its id is free; with `write`, now
 * stored), `same`, or `other` (another plant under its id, never overwritten). A batch commits whole: an import
 * killed at any moment and run again stores every plant once. Refused lines and differences are told in line order.
 */
async function replay (store: BulkStore, from: string | undefined, limit: number, write: boolean): Promise<number> {
  const count = { new: 0, same: 0, other: 0, read: 0, refused: 0, bytes: 0 }
  // Rates over the command's run: performance.now() counts from the process's start.
  const progress = process.stderr.isTTY && setInterval(() => {
    const seconds = performance.now() / 1000
    const left = (from === undefined ? 0 : statSync(from).size - count.bytes) * seconds / count.bytes
    const time = left >= 0 && left < Infinity ? `, ${Math.round(left)} s left` : ''
    process.stderr.write(`\r${count.read} plants, ${Math.round(count.read / seconds)}/s${time}   `)
  }, 1000)
  // One object a line, its plant or why it was refused: a batch outlives a young-generation collection or two.
  const batch: Array<Row & { line: number, refused?: never } | { line: number, refused: string, id?: never }> = []
  async function settle (entries: typeof batch): Promise<void> {
    const rows = entries.filter((entry) => entry.refused === undefined)
    const added = write ? await store.insert(rows) : 0
    count.new += added
    // Each line against what is stored now: its id stored before, or by an earlier line of the batch, holds the
    // same or another plant. The plants just stored are counted as same below, so they are taken off.
    const stored = added === rows.length ? [] : await store.stored(rows)
    if (stored.length > 0) count.same -= added
    for (const entry of entries) {
      if (entry.refused === undefined && stored.length === 0) continue
      const now = entry.refused === undefined ? stored.shift() : undefined
      const kind = entry.refused === undefined ? kindOf(entry, now) : 'refused'
      count[kind]++
      // import tells every refused line and conflict; verify, the first ten differences (each counted before).
      if (kind === 'same' || !(write || count.new + count.other + count.refused <= 10)) continue
      const message = entry.refused ?? `id ${entry.id} is ${now ? `stored as ${lineOf(now)}` : 'not stored'}`
      process.stderr.write(`line ${entry.line}: ${message}\n`)
    }
  }
  // A line read as a POST /plants body is (BODY_LIMIT, strict UTF-8, exact ids, the schema), refused in its words.
  let [rest, line, settled, pending] = [Buffer.alloc(0), 0, 0, Promise.resolve()]
  function check (text: Buffer, line: number): void {
    const body = text.at(-1) === 13 ? text.subarray(0, -1) : text
    if (body.length === 0) return
    count.read++
    try {
      if (body.length > limit) throw new Error('Request body is too large')
      const plant = plainLine(body.toString()) ?? parseBody(body, undefined, limit)
      const { value, error } = validate(plant) as { value?: NewPlant, error?: Error }
      if (value === undefined) throw error
      batch.push({ line, id: value.id, name: value.name, tag: value.tag ?? null })
    } catch (error) {
      batch.push({ line, refused: (error as Error).message })
    }
  }
  // Lines end at \n (a \r before it is dropped); of a line past BODY_LIMIT, only enough to refuse it is kept. One
  // batch is in the store while the next is read and checked.
  try {
    for await (const chunk of from === undefined ? process.stdin : createReadStream(from)) {
      count.bytes += chunk.length
      const data = Buffer.concat([rest, chunk])
      let start = 0
      for (let end; (end = data.indexOf(10, start)) !== -1; start = end + 1) {
        check(data.subarray(start, end), ++line)
        if (batch.length < PAGE.rows && count.bytes - settled < PAGE.bytes) continue
        await pending
        ;(pending = settle(batch.splice(0))).catch(() => {})
        settled = count.bytes
      }
      rest = data.subarray(start, start + limit + 2)
    }
    check(rest, ++line)
    await pending
    await settle(batch)
  } finally {
    clearInterval(progress || undefined)
    if (progress) process.stderr.write('\r\x1b[K')
  }
  if (write) {
    process.stdout.write(`read ${count.read}, stored ${count.new}, present ${count.same}, conflicts ${count.other}, ` +
      `refused ${count.refused}\n`)
    return count.other + count.refused === 0 ? 0 : 1
  }
  // With every line identical, a store of as many plants as the export is the export; more are plants created since.
  let kept = 0
  for await (const page of store.plants()) kept += page.length
  process.stdout.write(`export: ${count.new + count.same + count.other} plants\nstore: ${kept} plants\n` +
    `identical ${count.same}, missing ${count.new}, differing ${count.other}, refused ${count.refused}\n`)
  return count.new + count.other + count.refused === 0 ? 0 : 1
}

/** The exit status: 0 done; 1 a line refused, a conflict or a difference; 2 the command could not run. */
async function main (args: string[]): Promise<number> {
  const { values: { help, version, ...paths }, positionals: [name, ...operands], tokens } =
    parseArgs({ args, options: OPTIONS, allowPositionals: true, tokens: true })
  if (help === true || version === true) {
    const { version: number } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))
    process.stdout.write(help === true ? USAGE : `plant-store ${number}\n`)
    return 0
  }
  const flags = tokens.flatMap((token) => token.kind === 'option' ? `--${token.name}` : [])
  if (!FORMS.test([name, ...flags, ...operands.map(() => 'FILE')].join(' ')) || operands[0] === '-') {
    throw Object.assign(new Error(`not a command and its arguments: ${args.join(' ')}`), { code: 'ERR_PARSE_ARGS' })
  }
  // Only the variables the command uses, checked as the service checks them.
  const sqlite = /^\s*sqlite:/.test(process.env.DATABASE_URL ?? '')
  const body = name === 'import' || name === 'verify'
  const used = ['DATABASE_URL', sqlite ? '' : 'DATABASE_STATEMENT_TIMEOUT_MS', body ? 'BODY_LIMIT' : '']
  const env = readEnv(Object.fromEntries(used.map((key) => [key, process.env[key]])))
  const { DATABASE_URL: url, DATABASE_STATEMENT_TIMEOUT_MS: timeout, BODY_LIMIT: limit } = env
  if (url === 'memory:') throw new Error('DATABASE_URL: memory: lives in the service; use sqlite:<path> or postgres://')
  if (name === 'backup' && !sqlite) throw new Error('backup copies a SQLite store; for PostgreSQL, use pg_dump')
  if (name === 'backup') return (await import('./sqlite-bulk.js')).backupSqlite(url, operands[0] as string)
  const [from, to] = [paths.from, paths.to].map((path) => path === '-' ? undefined : path)
  const write = name === 'import'
  // PostgreSQL first: a server that cannot be used is named, with its own words, before any schema work.
  let store = sqlite ? undefined : await (await import('./postgres-bulk.js')).openStore(url, timeout)
  try {
    // The schema brought up to date first, as the service does.
    if (write) await createRepository({ ...env, MAX_PLANTS: 1 }).then((one) => one.ready().finally(() => one.close()))
    store ??= (await import('./sqlite-bulk.js')).openStore(url, write)
    return name === 'export' ? await exportPlants(store, to) : await replay(store, from, limit, write)
  } finally {
    await store?.close()
  }
}

// A reader that stops early (`export | head`) closes the pipe: the command then ends quietly, as asked.
process.stdout.on('error', () => {})
main(process.argv.slice(2)).then((status) => { process.exitCode = status }, (error: Error & { code?: string }) => {
  if (error.code === 'EPIPE') return
  // A mistake in the command line comes with the usage line; a failure, with its cause.
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ''
  const usage = error.code?.startsWith('ERR_PARSE_ARGS') === true ? USAGE : ''
  process.stderr.write(`plant-store: ${error.message}${cause}\n${usage}`)
  process.exitCode = 2
})
