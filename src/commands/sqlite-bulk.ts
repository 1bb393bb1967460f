import { existsSync, realpathSync } from 'node:fs'
import Database from 'better-sqlite3'
import { PAGE, writeWhole, type BulkStore, type Row } from './store.js'

export function openStore (url: string, write: boolean): BulkStore {
  const db = new Database(url.slice('sqlite:'.length), { readonly: !write, fileMustExist: true, timeout: 5000 })
  // Ids as bigints (exact past 2^53). Each batch's commit waits for the disk, so the summary reports durable plants.
  db.defaultSafeIntegers(true)
  db.pragma('synchronous = FULL')
  const get = db.prepare<[bigint], Row>('SELECT id, name, tag FROM plants WHERE id = ?')
  // 100 plants a statement, a batch a transaction: a call into SQLite costs about as much as storing one plant.
  const put = (count: number) => db.prepare('INSERT INTO plants (id, name, tag) VALUES ' +
    `${Array(count).fill('(?, ?, ?)').join(', ')} ON CONFLICT (id) DO NOTHING`)
  const hundred = put(100)
  const insertAll = db.transaction((rows: Row[]) => {
    let added = 0
    for (let i = 0; i < rows.length; i += 100) {
      const values = rows.slice(i, i + 100).flatMap((row) => [row.id, row.name, row.tag])
      added += (values.length === 300 ? hundred : put(values.length / 3)).run(values).changes
    }
    return added
  })
  return {
    async * plants () {
      // One statement, one read transaction: in WAL mode, a snapshot that writers do not block.
      const page: Row[] = []
      let bytes = 0
      for (const row of db.prepare<[], Row>('SELECT id, name, tag FROM plants ORDER BY id').iterate()) {
        if (page.push(row) < 1000 && (bytes += row.name.length + (row.tag?.length ?? 0)) < PAGE.bytes) continue
        yield page.splice(0)
        bytes = 0
      }
      yield page
    },
    insert: async (rows: Row[]) => insertAll.immediate(rows),
    stored: async (rows: Row[]) => rows.map((row) => get.get(BigInt(row.id))),
    close: async () => { db.close() }
  }
}

/**
 * An online copy (VACUUM INTO reads one snapshot while the service writes), written whole and checked with
 * integrity_check before it takes the given name: a file under that name is always a whole backup. Never the store.
 */
export async function backupSqlite (url: string, file: string): Promise<number> {
  const store = url.slice('sqlite:'.length)
  if (existsSync(file) && realpathSync(file) === realpathSync(store)) throw new Error(`${file} is the store itself`)
  let count: unknown
  await writeWhole(file, async (partial) => {
    new Database(store, { readonly: true, fileMustExist: true, timeout: 5000 }).prepare('VACUUM INTO ?').run(partial)
    const copy = new Database(partial, { readonly: true })
    const check = copy.pragma('integrity_check', { simple: true })
    count = copy.prepare('SELECT count(*) FROM plants').pluck().get()
    copy.close()
    if (check !== 'ok') throw new Error(`the copy fails integrity_check: ${String(check)}`)
  })
  process.stdout.write(`backed up ${String(count)} plants to ${file}, integrity_check ok\n`)
  return 0
}
