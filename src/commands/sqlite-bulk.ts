import { renameSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { INT64_MAX, INT64_MIN } from '../schemas.js'
import { fsync, type BulkStore, type Row } from './store.js'

export function openSqlite (path: string, write: boolean): BulkStore {
  const db = new Database(path, { readonly: !write, fileMustExist: true, timeout: 5000 })
  // Ids as bigints (exact past 2^53). A commit does not wait for the disk (a batch lost to a crash is stored again
  // by the next run); close() makes every batch durable before the import reports it.
  db.defaultSafeIntegers(true)
  db.pragma('synchronous = NORMAL')
  const get = db.prepare<[bigint], Row>('SELECT id, name, tag FROM plants WHERE id = ?')
  const put = db.prepare<[bigint, string, string | null]>(
    'INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING')
  const insertAll = db.transaction((rows: Row[]) =>
    rows.reduce((added, row) => added + put.run(BigInt(row.id), row.name, row.tag).changes, 0))
  return {
    async * plants () {
      // One read transaction: in WAL mode, a snapshot that writers do not block. Pages: iterate() is 3 times slower.
      const next = db.prepare<[bigint], Row>('SELECT id, name, tag FROM plants WHERE id >= ? ORDER BY id LIMIT 1000')
      db.exec('BEGIN')
      for (let from: bigint | undefined = INT64_MIN; from !== undefined;) {
        const rows = next.all(from)
        const last = rows.at(-1)?.id
        from = rows.length === 1000 && last !== INT64_MAX ? BigInt(last as bigint) + 1n : undefined
        yield rows
      }
      db.exec('COMMIT')
    },
    insert: async (rows) => insertAll.immediate(rows),
    find: async (ids) => ids.flatMap((id) => get.get(BigInt(id)) ?? []),
    async close () {
      if (write && db.open) fsync(`${path}-wal`)
      db.close()
    }
  }
}

/**
 * An online copy (VACUUM INTO reads one snapshot while the service writes) under a temporary name, checked with
 * integrity_check, flushed, then renamed: a file under the given name is always a whole backup.
 */
export function backupSqlite (path: string, file: string): number {
  const partial = `${file}.partial`
  rmSync(partial, { force: true })
  new Database(path, { readonly: true, fileMustExist: true, timeout: 5000 }).prepare('VACUUM INTO ?').run(partial)
  const copy = new Database(partial, { readonly: true })
  const check = copy.pragma('integrity_check', { simple: true })
  const count = copy.prepare('SELECT count(*) FROM plants').pluck().get()
  copy.close()
  if (check !== 'ok') throw new Error(`the copy ${partial} fails integrity_check: ${String(check)}`)
  fsync(partial)
  renameSync(partial, file)
  fsync(dirname(file))
  process.stdout.write(`backed up ${String(count)} plants to ${file}, integrity_check ok\n`)
  return 0
}
