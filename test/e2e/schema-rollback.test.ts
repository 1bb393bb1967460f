import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createSqlitePlantRepository } from '../../src/plants/sqlite-plant-repository.js'
import { docBlock } from '../docs/blocks.js'
import { postgresTargets, requiredButMissing, type TestSchemas } from '../plants/postgres-test-schemas.js'
import { startServer } from './server-process.js'
import { get, postPlant, runServerToExit } from './storage-process.js'

// docs/production.md, "Upgrading and rolling back": what a release does on a schema a later release extended.

const dir = mkdtempSync(join(tmpdir(), 'plant-store-rollback-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A SQLite file this release made, then extended by a later release's step 2 (a table), recorded with `runsOn`. */
async function sqliteWithLaterStep (name: string, runsOn: number): Promise<string> {
  const path = join(dir, name)
  await createSqlitePlantRepository(path).close()
  const db = new Database(path)
  db.exec('CREATE TABLE plant_notes (id INTEGER PRIMARY KEY) STRICT')
  db.prepare('INSERT INTO plant_store_migrations (version, applied_at, runs_on) VALUES (2, ?, ?)').run(new Date().toISOString(), runsOn)
  db.close()
  return path
}

describe('rolling back on SQLite (built server)', () => {
  it('starts, is ready and stores plants on a schema whose later step is compatible', async () => {
    const server = await startServer({ DATABASE_URL: `sqlite:${await sqliteWithLaterStep('compatible.db', 1)}` })
    expect((await get(server.url, '/readyz')).status).toBe(200)
    expect((await postPlant(server.url, 1n, 'fern')).status).toBe(200)
  })

  it('refuses to start on a schema whose later step is not compatible: exit 1, one line naming the versions', async () => {
    const path = await sqliteWithLaterStep('incompatible.db', 2)
    const { code, stderr } = await runServerToExit({ DATABASE_URL: `sqlite:${path}` })
    expect(code).toBe(1)
    expect(stderr).toBe(
      `plant-store: cannot start: SQLite database ${path}: schema version 2 needs a release that knows version 2 or later; this one knows 1\n`
    )
  })
})

for (const message of requiredButMissing()) {
  describe('rolling back on PostgreSQL (built server)', () => {
    it('runs: REQUIRE_POSTGRES=1 turns a skip into a failure', () => {
      expect.fail(message)
    })
  })
}

// Direct to the server: psql, like the service, reads the schema from the URL's `options`, which a pooler refuses.
const direct = postgresTargets()[0]
if (direct?.skip !== undefined) console.warn(`PostgreSQL rollback tests skipped: ${direct.skip} (CI sets REQUIRE_POSTGRES=1)`)
describe.skipIf(direct?.skip !== undefined)('rolling back on PostgreSQL (built server)', () => {
  let schemas: TestSchemas
  beforeAll(async () => { schemas = await (direct as NonNullable<typeof direct>).open() })
  afterAll(() => schemas.dropAll())

  /** A schema this release made (versions 1 and 2), then extended by a later release's step 3, recorded with `runsOn`. */
  async function postgresWithLaterStep (runsOn: number): Promise<string> {
    const url = await schemas.create()
    const first = await startServer({ DATABASE_URL: url })
    await vi.waitFor(async () => expect((await get(first.url, '/readyz')).status).toBe(200), { timeout: 10000, interval: 50 })
    first.child.kill('SIGTERM')
    await first.exited
    const schema = schemas.schemaOf(url)
    await schemas.query(`CREATE TABLE ${schema}.plant_notes (id bigint PRIMARY KEY)`)
    await schemas.query(`INSERT INTO ${schema}.plant_store_migrations (version, runs_on) VALUES (3, $1)`, [runsOn])
    return url
  }

  it('starts, is ready and stores plants on a schema whose later step is compatible; the docs\' query shows where it stands', { timeout: 30000 }, async () => {
    const url = await postgresWithLaterStep(1)
    const server = await startServer({ DATABASE_URL: url })
    await vi.waitFor(async () => expect((await get(server.url, '/readyz')).status).toBe(200), { timeout: 10000, interval: 50 })
    expect((await postPlant(server.url, 1n, 'fern')).status).toBe(200)

    // libpq decodes only %-escapes: the space URLSearchParams wrote as + in `options` is written %20, as a person would.
    const env = { ...process.env, DATABASE_URL: url.replaceAll('+', '%20') }
    const { stdout } = await promisify(execFile)('sh', ['-c', docBlock('docs/production.md', 'schema-versions')], { env })
    const rows = stdout.split('\n').filter((line) => /^\s*\d+ \|/.test(line)).map((line) => line.split('|').slice(0, 2).map((cell) => Number(cell.trim())))
    expect(rows).toEqual([[1, 1], [2, 1], [3, 1]])
  })

  it('is never ready on a schema whose later step is not compatible, and logs the one line naming the versions', { timeout: 30000 }, async () => {
    const server = await startServer({ DATABASE_URL: await postgresWithLaterStep(3) })
    const message = 'schema version 3 needs a release that knows version 3 or later; this one knows 2'
    await vi.waitFor(async () => {
      expect((await get(server.url, '/readyz')).status).toBe(503)
      expect(server.stdout).toContainEqual(expect.stringContaining(message))
    }, { timeout: 10000, interval: 100 })
    expect((await postPlant(server.url, 1n, 'fern')).status).toBe(503)
  })
})
