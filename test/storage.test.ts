import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it, onTestFinished } from 'vitest'
import { ConfigError } from '../src/config/config-error.js'
import { StoreUnavailableError } from '../src/errors.js'
import { createRepository } from '../src/storage.js'

const dir = mkdtempSync(join(tmpdir(), 'plant-store-storage-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/**
 * In a fresh node process (the built code: vitest's own workers load other modules), picks the store
 * for `databaseUrl`, uses it, and reports the native addons loaded (.node files, from the process
 * report) and the driver modules in the CommonJS cache.
 */
async function loadedBy (databaseUrl: string): Promise<{ addons: string[], drivers: string[] }> {
  const script = `
    import { createRequire } from 'node:module'
    const { createRepository } = await import(${JSON.stringify(new URL('../dist/storage.js', import.meta.url).href)})
    const repository = await createRepository({ DATABASE_URL: process.argv[1], MAX_PLANTS: 10 })
    await repository.insert(1, { name: 'fern' }).catch(() => {})
    const addons = process.report.getReport().sharedObjects.filter((file) => file.endsWith('.node'))
    const drivers = [...new Set(Object.keys(createRequire(import.meta.url).cache)
      .map((file) => /node_modules[\\\\/](pg|better-sqlite3)[\\\\/]/.exec(file)?.[1]).filter(Boolean))]
    await repository.close()
    process.stdout.write(JSON.stringify({ addons, drivers }))
  `
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, databaseUrl])
  return JSON.parse(stdout)
}

describe('createRepository', () => {
  it('loads no native module and no database driver for the memory store', async () => {
    expect(await loadedBy('memory:')).toEqual({ addons: [], drivers: [] })
  })

  it('loads better-sqlite3 and its native addon only for a sqlite: URL (the check can see it)', async () => {
    const loaded = await loadedBy(`sqlite:${join(dir, 'plants.db')}`)
    expect(loaded.drivers).toEqual(['better-sqlite3'])
    expect(loaded.addons).toEqual([expect.stringMatching(/node_modules[\\/]better-sqlite3[\\/].*\.node$/)])
  })

  it('loads pg and no native module for a postgres:// URL', async () => {
    expect(await loadedBy('postgres://postgres@127.0.0.1:1/test')).toEqual({ addons: [], drivers: ['pg'] })
  })

  it.each(['postgres://u@127.0.0.1:1/db', 'postgresql://u@127.0.0.1:1/db'])('takes %s as PostgreSQL: it tries that server, so ready() rejects',
    async (databaseUrl) => {
      const repository = await createRepository({ DATABASE_URL: databaseUrl, MAX_PLANTS: 1 })
      onTestFinished(() => repository.close())
      await expect(repository.ready()).rejects.toBeInstanceOf(StoreUnavailableError)
      await expect(repository.ready()).rejects.toHaveProperty('cause.code', 'ECONNREFUSED')
    })

  it.each([
    ['postgres://plants:hunter2#1@db.internal/plants', /^DATABASE_URL: not a valid URL at the host \(percent-encode/],
    ['postgres://plants:hunter2@db internal/plants', /^DATABASE_URL: not a valid URL at the host/],
    ['postgres://plants:hunter2/x@db.internal/plants', /^DATABASE_URL: not a valid URL at the host/],
    ['postgres://plants:hunter2@db1:5432,:5432/plants', /^DATABASE_URL: not a valid URL at host 2 of 2/],
    ['postgres://plants:hunter2@db1,,db2/plants', /^DATABASE_URL: not a valid URL at host 2 of 3/],
    ['postgres://plants:hunter2@db1:99999/plants', /^DATABASE_URL: not a valid URL at the host/],
    ['postgres://plants:hunter2@db1,db2/plants?target_session_attrs=standby',
      /^DATABASE_URL: target_session_attrs must be read-write, primary or any \(the service writes\)$/],
    ['postgres://plants:hunter2@db1/plants?target_session_attrs=writable', /^DATABASE_URL: target_session_attrs must be read-write, primary or any/]
  ])('throws a ConfigError naming DATABASE_URL, and never the password, for %s', async (databaseUrl, message) => {
    const attempt = createRepository({ DATABASE_URL: databaseUrl, MAX_PLANTS: 1 })
    await expect(attempt).rejects.toBeInstanceOf(ConfigError)
    await expect(attempt).rejects.toThrow(message)
    await expect(attempt).rejects.not.toThrow(/hunter2/)
  })

  it('takes a libpq multi-host URL, trying each host in order: ready() names every host it tried', async () => {
    const repository = await createRepository({ DATABASE_URL: 'postgres://u:hunter2@127.0.0.1:1,127.0.0.1:2/db?target_session_attrs=read-write', MAX_PLANTS: 1 })
    onTestFinished(() => repository.close())
    await expect(repository.ready()).rejects.toBeInstanceOf(StoreUnavailableError)
    await expect(repository.ready()).rejects.toHaveProperty('cause.message',
      expect.stringMatching(/^no host takes writes \(target_session_attrs=read-write\): 127\.0\.0\.1:1: .*ECONNREFUSED.*; 127\.0\.0\.1:2: .*ECONNREFUSED/))
  })

  it.each(['sqlite:', 'sqlite::memory:'])('throws a ConfigError for %s, which names no file', async (databaseUrl) => {
    await expect(createRepository({ DATABASE_URL: databaseUrl, MAX_PLANTS: 1 })).rejects.toThrow(/^DATABASE_URL: sqlite: needs a file path/)
  })
})
