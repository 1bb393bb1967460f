#!/usr/bin/env -S node --max-semi-space-size=4
// V8's young generation grows to 32 MiB semi-spaces under an import's garbage: 4 MiB keeps RSS well under 150 MB.
import { createWriteStream } from 'node:fs'
import { rename } from 'node:fs/promises'
import { pipeline } from 'node:stream/promises'
import { parseArgs } from 'node:util'
import { readEnv } from '../config/env.js'
import { createRepository } from '../storage.js'
import { replay } from './replay.js'
import { lineOf, type BulkStore } from './store.js'

const USAGE = 'usage: plant-store export [--to FILE] | import [--from FILE] | backup FILE | verify --from FILE, ' +
  'on the store DATABASE_URL names'

/** The store DATABASE_URL names; `write` first brings its schema up to date, as the service does. */
async function openStore (url: string, write: boolean): Promise<BulkStore> {
  if (url === 'memory:') {
    throw new Error('DATABASE_URL is memory:, a store inside the service\'s process; use sqlite:<path> or postgres://…')
  }
  if (write) {
    const repository = await createRepository({ DATABASE_URL: url, MAX_PLANTS: 1 })
    await repository.ready().finally(() => repository.close())
  }
  if (url.startsWith('sqlite:')) return (await import('./sqlite-bulk.js')).openSqlite(url.slice(7), write)
  if (/^postgres(?:ql)?:\/\//.test(url)) return (await import('./postgres-bulk.js')).openPostgres(url)
  throw new Error('DATABASE_URL: use sqlite:<path> or postgres://…')
}

/** Every plant, one JSON line each, from one snapshot, streamed; a file gets its name only once complete. */
async function exportPlants (store: BulkStore, to: string | undefined): Promise<number> {
  let count = 0
  async function * text () {
    for await (const page of store.plants()) {
      count += page.length
      yield page.map((row) => lineOf(row) + '\n').join('')
    }
  }
  const partial = `${to}.partial`
  await pipeline(text, to === undefined ? process.stdout : createWriteStream(partial), { end: to !== undefined })
  if (to !== undefined) await rename(partial, to)
  process.stderr.write(`exported ${count} plants\n`)
  return 0
}

/** The exit status: 0 done; 1 a line refused, a conflict or a difference; 2 the command could not run. */
async function main ([command = '', ...args]: string[]): Promise<number> {
  const options = { to: { type: 'string' }, from: { type: 'string' } } as const
  const { values, positionals, tokens } = parseArgs({ args, options, allowPositionals: true, tokens: true })
  const form = [command, ...tokens.map((token) => token.kind === 'option' ? `--${token.name}` : 'FILE')].join(' ')
  if (!/^(?:export(?: --to)?|import(?: --from)?|verify --from|backup FILE)$/.test(form)) throw new Error(USAGE)
  const { DATABASE_URL: url, BODY_LIMIT: limit } = readEnv(process.env)
  if (command === 'backup') {
    if (!url.startsWith('sqlite:')) throw new Error('backup copies a SQLite store; for PostgreSQL, use pg_dump')
    return (await import('./sqlite-bulk.js')).backupSqlite(url.slice('sqlite:'.length), positionals[0] as string)
  }
  const write = command === 'import'
  const store = await openStore(url, write)
  const run = command === 'export' ? exportPlants(store, values.to) : replay(store, values.from, limit, write)
  return await run.finally(() => store.close())
}

main(process.argv.slice(2)).then((status) => { process.exitCode = status }, (error: unknown) => {
  process.stderr.write(`plant-store: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exitCode = 2
})
