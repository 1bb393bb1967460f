import { execFile, spawnSync } from 'node:child_process'
import { appendFileSync, chownSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runAs } from '../plants/pgbouncer.js'
import { findPostgresBinaries } from '../plants/postgres-standby.js'
import { freePort } from '../helpers.js'
import { docBlock } from './blocks.js'

// docs/performance.md's settings for tens of millions of plants change the server's own configuration
// (ALTER SYSTEM), so they run on a PostgreSQL this test makes for itself (initdb), never on one that
// others share: psql runs the block, the server restarts, and the settings hold. Skips with the reason
// without the server binaries; REQUIRE_POSTGRES=1 (CI) turns the skip into a failure.
const run = promisify(execFile)
const bin = findPostgresBinaries()
const skip = bin === undefined ? 'the PostgreSQL server binaries (initdb, pg_ctl) are not installed (apt-get install postgresql, or set PG_BIN)' : undefined

if (skip !== undefined && process.env.REQUIRE_POSTGRES === '1') {
  it('runs: REQUIRE_POSTGRES=1 turns the skip into a failure', () => { expect.fail(`REQUIRE_POSTGRES=1 but ${skip}`) })
}

describe.skipIf(skip !== undefined)(skip !== undefined
  ? `docs/performance.md's PostgreSQL settings skipped: ${skip}`
  : 'docs/performance.md: PostgreSQL at tens of millions of plants', () => {
  // Made in beforeAll: collecting a skipped suite leaves nothing behind.
  let dir = ''
  let data = ''
  const user = runAs()
  let port = 0
  const tool = async (name: string, args: string[]): Promise<void> => {
    await run(join(bin ?? '', name), args, { ...(user ?? {}), env: { PATH: process.env.PATH, LC_ALL: 'C' }, timeout: 60000 })
  }
  const psql = (sql: string): { status: number | null, stdout: string, stderr: string } => {
    const result = spawnSync('psql', [
      '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-f', '-'
    ], { input: sql, encoding: 'utf8', timeout: 30000 })
    return { status: result.status, stdout: result.stdout.trim(), stderr: result.stderr }
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-tuning-'))
    data = join(dir, 'data')
    if (user !== undefined) chownSync(dir, user.uid, user.gid)
    port = await freePort()
    await tool('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-N', '--no-instructions'])
    appendFileSync(join(data, 'postgresql.conf'), `listen_addresses = '127.0.0.1'\nport = ${port}\nunix_socket_directories = '${dir}'\nfsync = off\n`)
    await tool('pg_ctl', ['start', '-D', data, '-l', join(dir, 'server.log'), '-w'])
  }, 120000)

  afterAll(async () => {
    if (dir === '') return
    await tool('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w']).catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  })

  it('sets shared_buffers and max_wal_size, which hold after a restart', { timeout: 120000 }, async () => {
    expect(psql('SHOW shared_buffers; SHOW max_wal_size;').stdout).toBe('128MB\n1GB') // the defaults the page compares with
    const ran = psql(docBlock('docs/performance.md', 'postgres-tuning'))
    expect([ran.status, ran.stderr]).toEqual([0, ''])
    await tool('pg_ctl', ['restart', '-D', data, '-l', join(dir, 'server.log'), '-w', '-m', 'fast'])
    expect(psql('SHOW shared_buffers; SHOW max_wal_size;').stdout).toBe('2GB\n8GB')
  })
})
