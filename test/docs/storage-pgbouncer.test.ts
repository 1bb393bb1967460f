import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startServer } from '../e2e/server-process.js'
import { findPgBouncer, runAs } from '../plants/pgbouncer.js'
import { freePort, postOverHttp } from '../helpers.js'
import { docBlock } from './blocks.js'
import { usePostgresRole } from './postgres-role.js'

// docs/storage.md's pgbouncer.ini as written, with only what a shared test machine needs changed: the
// server's address, a database and a port of this run, its files in a folder of its own. The service
// then serves through it as docs/production.md's role. Skips with the reason without TEST_DATABASE_URL,
// psql or pgbouncer; REQUIRE_PGBOUNCER=1 (CI) makes that a failure.
const adminUrl = process.env.TEST_DATABASE_URL
const binary = findPgBouncer()
const unavailable = adminUrl === undefined
  ? 'TEST_DATABASE_URL is not set'
  : spawnSync('psql', ['--version']).status !== 0
    ? 'psql is not installed'
    : binary === undefined ? 'pgbouncer is not installed' : undefined
const TOKEN = 'pgbouncer-docs-token'

if (unavailable !== undefined && process.env.REQUIRE_PGBOUNCER === '1') {
  it('runs: REQUIRE_PGBOUNCER=1 turns the skip into a failure', () => {
    expect.fail(`REQUIRE_PGBOUNCER=1 but ${unavailable}: docs/storage.md's pgbouncer.ini would not be run`)
  })
}

describe.skipIf(unavailable !== undefined)(unavailable === undefined
  ? 'docs/storage.md: PgBouncer as configured there'
  : `docs/storage.md's PgBouncer skipped: ${unavailable}`, () => {
  const { role, database } = usePostgresRole(adminUrl ?? '')
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-docs-pgbouncer-'))
  let bouncer: ChildProcess | undefined
  let port = 0

  beforeAll(async () => {
    const server = new URL(adminUrl ?? '')
    port = await freePort()
    const ini = docBlock('docs/storage.md', 'pgbouncer-ini')
      .replace('host=db.internal port=5432 dbname=plants', `host=${server.hostname} port=${server.port || 5432} dbname=${database}`)
      .replace(/^listen_port = \d+$/m, `listen_port = ${port}`)
      .replace('/etc/pgbouncer/userlist.txt', join(dir, 'userlist.txt')) +
      ['listen_addr = 127.0.0.1', `unix_socket_dir = ${dir}`, `logfile = ${join(dir, 'pgbouncer.log')}`,
        `pidfile = ${join(dir, 'pgbouncer.pid')}`, ''].join('\n')
    writeFileSync(join(dir, 'pgbouncer.ini'), ini)
    writeFileSync(join(dir, 'userlist.txt'), `"${role}" "change-me"\n`)
    const user = runAs()
    if (user !== undefined) chownSync(dir, user.uid, user.gid)
    bouncer = spawn(binary as string, [join(dir, 'pgbouncer.ini')], { stdio: 'ignore', ...(user ?? {}) })
  })

  afterAll(async () => {
    if (bouncer !== undefined && bouncer.exitCode === null) {
      const exited = new Promise((resolve) => bouncer?.once('exit', resolve))
      bouncer.kill('SIGTERM')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  })

  it('starts from the page\'s pgbouncer.ini, and the service migrates, gets ready and stores a plant through it', async () => {
    const log = (): string => { try { return readFileSync(join(dir, 'pgbouncer.log'), 'utf8') } catch { return '' } }
    const url = `postgres://${role}:change-me@127.0.0.1:${port}/plants`
    for (const deadline = Date.now() + 10000; ;) {
      const client = new pg.Client({ connectionString: url })
      client.on('error', () => {})
      try {
        await client.connect()
        await client.end()
        break
      } catch (error) {
        if (bouncer?.exitCode !== null || Date.now() > deadline) expect.fail(`pgbouncer did not take a connection: ${String(error)}\n${log()}`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    const server = await startServer({ API_TOKENS: TOKEN, DATABASE_URL: url })
    try {
      await vi.waitFor(async () => expect((await fetch(`${server.url}/readyz`)).status).toBe(200), { timeout: 15000, interval: 100 })
      const reply = await postOverHttp(server.url, TOKEN, '{"id":1,"name":"Monstera"}')
      expect([reply.status, await reply.json()]).toEqual([200, { name: 'Monstera' }])
    } finally {
      server.child.kill('SIGTERM')
      await server.exited
    }
  }, 60000)
})
