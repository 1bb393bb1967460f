import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it, onTestFinished } from 'vitest'
import { ConfigError } from '../../src/config/config-error.js'
import { StoreFullError, StoreUnavailableError } from '../../src/errors.js'
import { createSqlitePlantRepository } from '../../src/plants/sqlite-plant-repository.js'
import { repositoryContract } from './repository-contract.js'

const dir = mkdtempSync(join(tmpdir(), 'plant-store-sqlite-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const newPath = (): string => join(dir, `plants-${++files}.db`)

repositoryContract('sqlite', async () => createSqlitePlantRepository(newPath()))

describe('SQLite store', () => {
  it('keeps every plant across close and reopen', async () => {
    const path = newPath()
    const first = createSqlitePlantRepository(path)
    expect(await Promise.all([first.insert(2n ** 63n - 1n, { name: 'max' }), first.insert(1, { name: 'one', tag: 't' })])).toEqual(['created', 'created'])
    await first.close()
    const second = createSqlitePlantRepository(path)
    onTestFinished(() => second.close())
    expect(await second.insert(2n ** 63n - 1n, { name: 'max' })).toBe('same')
    expect(await second.insert(1, { name: 'one', tag: 't' })).toBe('same')
    expect(await second.insert(1, { name: 'one' })).toBe('conflict')
  })

  it('commits inserts that arrive together in one transaction, and awaited inserts one by one', async () => {
    const path = newPath()
    const store = createSqlitePlantRepository(path)
    onTestFinished(() => store.close())
    // Every commit appends at least one page-sized frame to the write-ahead log.
    const walFrames = (): number => statSync(`${path}-wal`).size / (4096 + 24)
    const start = walFrames()
    const ids = Array.from({ length: 200 }, (_, i) => i)
    expect(await Promise.all(ids.map((id) => store.insert(id, { name: 'fern' })))).toEqual(ids.map(() => 'created'))
    const afterBatch = walFrames()
    expect(afterBatch - start).toBeLessThan(10)
    for (let id = 1000; id < 1020; id++) await store.insert(id, { name: 'fern' })
    expect(walFrames() - afterBatch).toBeGreaterThanOrEqual(20)
  })

  it('reports each group commit\'s size to an observer (metrics)', async () => {
    const store = createSqlitePlantRepository(newPath())
    onTestFinished(() => store.close())
    const sizes: number[] = []
    store.observe?.({ batch: (size) => sizes.push(size) })
    await Promise.all([1, 2, 3].map((id) => store.insert(id, { name: 'fern' })))
    await store.insert(4, { name: 'fern' })
    expect(sizes).toEqual([3, 1])
  })

  it('creates the folder, uses WAL and a STRICT table, and records schema version 1 once however often it starts', async () => {
    const path = join(dir, 'nested', 'deeper', 'plants.db')
    await createSqlitePlantRepository(path).close()
    await createSqlitePlantRepository(path).close()
    const db = new Database(path, { readonly: true })
    onTestFinished(() => { db.close() })
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(db.prepare('SELECT version FROM plant_store_migrations').all()).toEqual([{ version: 1 }])
    expect(db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'plants'").pluck().get()).toMatch(/STRICT$/)
    expect(db.prepare("SELECT type, pk FROM pragma_table_info('plants') WHERE name = 'id'").get()).toEqual({ type: 'INTEGER', pk: 1 })
  })

  it('fails to start with a ConfigError naming DATABASE_URL when the path cannot be opened', () => {
    const file = join(dir, 'a-file')
    writeFileSync(file, 'not a folder')
    expect(() => createSqlitePlantRepository(join(file, 'plants.db'))).toThrow(ConfigError)
    expect(() => createSqlitePlantRepository(join(file, 'plants.db'))).toThrow(/^DATABASE_URL: cannot open the SQLite database .*a-file\/plants\.db: /)
  })

  it('fails to start with a ConfigError naming DATABASE_URL when the path is a folder', () => {
    expect(() => createSqlitePlantRepository(dir)).toThrow(/^DATABASE_URL: cannot open the SQLite database .*: /)
  })

  it('fails to start with a clear message when the file is not a database', () => {
    const file = join(dir, 'garbage.db')
    writeFileSync(file, 'x'.repeat(4096))
    expect(() => createSqlitePlantRepository(file)).toThrow(/^SQLite database .*garbage\.db: file is not a database$/)
  })

  /** A database this release made, then carrying a later release's step 2 (a table added) as it records it. */
  async function withLaterStep (runsOn: number): Promise<string> {
    const path = newPath()
    await createSqlitePlantRepository(path).close()
    const db = new Database(path)
    db.exec('CREATE TABLE plant_notes (id INTEGER PRIMARY KEY) STRICT')
    db.prepare('INSERT INTO plant_store_migrations (version, applied_at, runs_on) VALUES (2, ?, ?)').run(new Date().toISOString(), runsOn)
    db.close()
    return path
  }

  it('starts and serves on a schema a later release extended with a compatible step (its floor stays 1)', async () => {
    const store = createSqlitePlantRepository(await withLaterStep(1))
    onTestFinished(() => store.close())
    await store.ready()
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
    expect(await store.insert(1, { name: 'fern' })).toBe('same')
  })

  it('refuses to start, naming both versions, on a schema whose later step is not compatible', async () => {
    const path = await withLaterStep(2)
    expect(() => createSqlitePlantRepository(path)).toThrow(new Error(
      `SQLite database ${path}: schema version 2 needs a release that knows version 2 or later; this one knows 1`))
  })

  it('records each step with the oldest version a release may know to run on it', async () => {
    const path = newPath()
    await createSqlitePlantRepository(path).close()
    const db = new Database(path, { readonly: true })
    onTestFinished(() => { db.close() })
    expect(db.prepare('SELECT version, runs_on FROM plant_store_migrations').all()).toEqual([{ version: 1, runs_on: 1 }])
  })

  it('keeps the stored form that had no floor: its rows and plants stay, and a step counts as not compatible', async () => {
    const path = newPath()
    const old = new Database(path)
    old.exec(`CREATE TABLE plant_store_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL) STRICT;
      INSERT INTO plant_store_migrations VALUES (1, '2026-11-01T00:00:00.000Z');
      CREATE TABLE plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))) STRICT;
      INSERT INTO plants VALUES (7, 'fern', NULL, '2026-11-01T00:00:00.000Z')`)
    old.close()
    const store = createSqlitePlantRepository(path)
    expect(await store.insert(7, { name: 'fern' })).toBe('same')
    await store.close()
    const db = new Database(path)
    onTestFinished(() => { db.close() })
    expect(db.prepare('SELECT * FROM plant_store_migrations').all()).toEqual([{ version: 1, applied_at: '2026-11-01T00:00:00.000Z', runs_on: null }])
    // A version 2 written in that form by a release that knew it is taken as not compatible.
    db.exec("INSERT INTO plant_store_migrations (version, applied_at) VALUES (99, '')")
    expect(() => createSqlitePlantRepository(path)).toThrow(/: schema version 99 needs a release that knows version 99 or later; this one knows 1$/)
  })

  it('answers StoreFullError when the file cannot grow, keeps what it stored, and stays consistent', async () => {
    const path = newPath()
    const store = createSqlitePlantRepository(path, { maxPageCount: 12 })
    const stored: number[] = []
    let full: unknown
    for (let id = 1; id < 10000 && full === undefined; id++) {
      try {
        await store.insert(id, { name: 'a fairly long plant name '.repeat(20) })
        stored.push(id)
      } catch (error) {
        full = error
      }
    }
    expect(full).toBeInstanceOf(StoreFullError)
    expect(stored.length).toBeGreaterThan(0)
    for (const id of stored) expect(await store.insert(id, { name: 'a fairly long plant name '.repeat(20) })).toBe('same')
    await store.close()
    const db = new Database(path)
    onTestFinished(() => { db.close() })
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok')
    expect(db.prepare('SELECT count(*) FROM plants').pluck().get()).toBe(stored.length)
  })

  it('answers StoreUnavailableError while another process holds the write lock, then recovers', async () => {
    const path = newPath()
    const store = createSqlitePlantRepository(path, { busyTimeoutMs: 20 })
    onTestFinished(() => store.close())
    const other = new Database(path)
    onTestFinished(() => { other.close() })
    other.exec('BEGIN IMMEDIATE')
    await expect(store.insert(1, { name: 'fern' })).rejects.toBeInstanceOf(StoreUnavailableError)
    other.exec('COMMIT')
    expect(await store.insert(1, { name: 'fern' })).toBe('created')
  })

  it('waits for another process\'s write lock without blocking the event loop, and stores the plant once it is released', async () => {
    const path = newPath()
    const store = createSqlitePlantRepository(path)
    onTestFinished(() => store.close())
    const other = new Database(path)
    onTestFinished(() => { other.close() })
    other.exec('BEGIN IMMEDIATE')
    const insert = store.insert(1, { name: 'fern' })
    // SQLite's own busy wait would hold the event loop for the whole busyTimeoutMs (1000 ms): this timer would be late.
    const started = performance.now()
    await new Promise((resolve) => setTimeout(resolve, 100))
    const timerMs = performance.now() - started
    other.exec('COMMIT')
    expect(await insert).toBe('created')
    expect(timerMs).toBeLessThan(600)
  })

  it('commits at most 1000 inserts per transaction, however many arrive together', async () => {
    const store = createSqlitePlantRepository(newPath())
    onTestFinished(() => store.close())
    const sizes: number[] = []
    store.observe?.({ batch: (size) => sizes.push(size) })
    const ids = Array.from({ length: 2500 }, (_, index) => index + 1)
    expect(new Set(await Promise.all(ids.map((id) => store.insert(id, { name: 'fern' }))))).toEqual(new Set(['created']))
    expect(sizes).toEqual([1000, 1000, 500])
  })

  it('rejects inserts after close with StoreUnavailableError, and ready() too', async () => {
    const store = createSqlitePlantRepository(newPath())
    await store.close()
    await expect(store.insert(1, { name: 'fern' })).rejects.toBeInstanceOf(StoreUnavailableError)
    await expect(store.ready()).rejects.toBeInstanceOf(StoreUnavailableError)
  })
})
