#!/usr/bin/env node
import { parseArgs } from 'node:util'
import { readEnv } from '../config/env.js'
import { exportPlants } from './export.js'
import { importPlants } from './import.js'
import { openStore } from './store.js'
import { verify } from './verify.js'

const USAGE = 'usage: plant-store export [--to FILE] | import [--from FILE] | backup FILE | verify --from FILE, ' +
  'on the store DATABASE_URL names'

/** The exit status: 0 done, 1 a line refused, a conflict or a difference, 2 the command could not run. */
async function main (args: string[]): Promise<number> {
  const { values: { to, from }, positionals: [command, file, ...extra] } = parseArgs({
    args, allowPositionals: true, options: { to: { type: 'string' }, from: { type: 'string' } }
  })
  const { DATABASE_URL: url, BODY_LIMIT: limit } = readEnv(process.env)
  const given = (value: string | undefined, name: string): string => value === undefined ? '-' : name
  const shape = [command, given(to, 'to'), given(from, 'from'), given(file, 'file'), ...extra]
  if (!/^(export (to|-) - -|import - (from|-) -|backup - - file|verify - from -)$/.test(shape.join(' '))) {
    throw new Error(USAGE)
  }
  if (command === 'backup') {
    if (!url.startsWith('sqlite:')) {
      throw new Error('backup copies a SQLite store; for PostgreSQL use pg_dump (docs/production.md)')
    }
    const { backupSqlite } = await import('./sqlite-bulk.js')
    process.stdout.write(`backed up ${backupSqlite(url.slice('sqlite:'.length), file as string)} plants to ${file}, ` +
      'integrity_check ok\n')
    return 0
  }
  const store = await openStore(url, command === 'import')
  try {
    if (command === 'export') return await exportPlants(store, to)
    if (command === 'import') return await importPlants(store, from, limit)
    return await verify(store, from as string, limit)
  } finally {
    await store.close()
  }
}

main(process.argv.slice(2)).then((status) => { process.exitCode = status }, (error: unknown) => {
  process.stderr.write(`plant-store: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exitCode = 2
})
