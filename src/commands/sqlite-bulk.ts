import { closeSync, fsyncSync, openSync, renameSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import type { BulkStore, Row } from './store.js'

const PAGE = 5000

export function openSqlite (path: string, write: boolean): BulkStore {
  const db = new Database(path, { readonly: !write, fileMustExist: true, timeout: 5000 })
  // Ids come back as bigints (exact past 2^53); a batch is on disk when insert() resolves, as a create's 200.
  db.defaultSafeIntegers(true)
  db.pragma('synchronous = FULL')
  const get = db.prepare<[bigint], Row>('SELECT id, name, tag FROM plants WHERE id = ?')
  const put = db.prepare<[bigint, string, string | null]>(
    'INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING')
  const insertAll = db.transaction((rows: Row[]) => rows.filter((row) => put.run(BigInt(row.id), row.name, row.tag)
    .changes === 0).map((row) => get.get(BigInt(row.id)) as Row))
  return {
    async * plants () {
      // One statement is one read transaction: in WAL mode, a snapshot that writers do not block.
      const page: Row[] = []
      for (const row of db.prepare<[], Row>('SELECT id, name, tag FROM plants ORDER BY id').iterate()) {
        if (page.push(row) === PAGE) yield page.splice(0)
      }
      if (page.length > 0) yield page
    },
    insert: async (rows) => insertAll.immediate(rows),
    find: async (ids) => ids.flatMap((id) => get.get(BigInt(id)) ?? []),
    close: async () => { db.close() }
  }
}

/**
 * An online copy (VACUUM INTO reads one snapshot; the service keeps writing) under a temporary name, checked with
 * integrity_check, flushed, then renamed: a file under the given name is always a whole backup.
 */
export function backupSqlite (path: string, file: string): number {
  const partial = `${file}.partial`
  rmSync(partial, { force: true })
  const db = new Database(path, { readonly: true, fileMustExist: true, timeout: 5000 })
  try {
    db.prepare('VACUUM INTO ?').run(partial)
  } finally {
    db.close()
  }
  const copy = new Database(partial, { readonly: true })
  const check = copy.pragma('integrity_check', { simple: true })
  const count = Number(copy.prepare('SELECT count(*) FROM plants').pluck().get())
  copy.close()
  if (check !== 'ok') throw new Error(`the copy ${partial} fails integrity_check: ${String(check)}`)
  fsync(partial)
  renameSync(partial, file)
  fsync(dirname(file))
  return count
}

/** Makes a file's (or a folder's) contents durable. */
export function fsync (name: string): void {
  const fd = openSync(name, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}
