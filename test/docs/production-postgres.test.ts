import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { Env } from '../../src/config/env.js'
import { startServer } from '../e2e/server-process.js'
import { postOverHttp } from '../helpers.js'
import { docBlock } from './blocks.js'
import { psql, urlFor, usePostgresRole } from './postgres-role.js'

// docs/production.md's PostgreSQL role, run with psql as an operator would, in a database made for
// this run on TEST_DATABASE_URL's server (whose user is a superuser); then the service started as that
// role, and the page's backup and restore run as that role. Skips with the reason without TEST_DATABASE_URL or psql; REQUIRE_POSTGRES=1 makes that a failure.
const adminUrl = process.env.TEST_DATABASE_URL
const psqlMissing = spawnSync('psql', ['--version']).status !== 0
const unavailable = adminUrl === undefined ? 'TEST_DATABASE_URL is not set' : psqlMissing ? 'psql is not installed' : undefined
const TOKEN = 'production-docs-token'

if (unavailable !== undefined && process.env.REQUIRE_POSTGRES === '1') {
  it('runs: REQUIRE_POSTGRES=1 turns the skip into a failure', () => {
    expect.fail(`REQUIRE_POSTGRES=1 but ${unavailable}: the PostgreSQL role recipe would not be run`)
  })
}

describe.skipIf(unavailable !== undefined)(unavailable === undefined
  ? 'docs/production.md: a PostgreSQL role for the service'
  : `docs/production.md's PostgreSQL role skipped: ${unavailable}`, () => {
  const admin = adminUrl ?? ''
  const { role, database, asAdmin, asRole, forThisRun, prepareDatabase } = usePostgresRole(admin)
  const restored = `${database}_restored`
  const work = mkdtempSync(join(tmpdir(), 'plant-store-production-'))
  afterAll(() => rmSync(work, { recursive: true, force: true }))

  it('makes a role that is no superuser, with a connection limit above a rollout of deploy/kubernetes', () => {
    const [superuser, createRole, createDb, limit] = psql(
      asAdmin(),
      `SELECT rolsuper, rolcreaterole, rolcreatedb, rolconnlimit FROM pg_roles WHERE rolname = '${role}';`
    ).stdout.split('|')
    expect([superuser, createRole, createDb]).toEqual(['f', 'f', 'f'])
    const deployment = parse(readFileSync(fileURLToPath(new URL('../../deploy/kubernetes/deployment.yaml', import.meta.url)), 'utf8')) as {
      spec: {
        replicas: number,
        strategy: { rollingUpdate: { maxSurge: number } },
        template: { spec: { containers: { env?: { name: string, value?: string }[] }[] } }
      }
    }
    const poolSetting = deployment.spec.template.spec.containers[0]?.env?.find((variable) => variable.name === 'DATABASE_POOL_MAX')?.value
    const poolMax = Number(poolSetting ?? Env.properties.DATABASE_POOL_MAX.default)
    const rollout = (deployment.spec.replicas + deployment.spec.strategy.rollingUpdate.maxSurge) * poolMax
    expect(rollout).toBe(40) // the figure the recipe's comment gives
    expect(Number(limit)).toBeGreaterThan(rollout) // room left for a command and a psql
  })

  it('lets the service migrate and serve a create as that role, its tables in the role\'s schema', async () => {
    const server = await startServer({ API_TOKENS: TOKEN, DATABASE_URL: asRole() })
    try {
      expect(await create(server.url, '{"id":1,"name":"Monstera"}')).toEqual([200, { name: 'Monstera' }])
    } finally {
      server.child.kill('SIGTERM')
      await server.exited
    }
    const tables = psql(asAdmin(), "SELECT schemaname || '.' || tablename || ' ' || tableowner FROM pg_tables WHERE tablename LIKE 'plant%' ORDER BY 1;").stdout
    expect(tables.split('\n')).toEqual(['plant_store_heartbeat', 'plant_store_migrations', 'plants'].map((table) => `${role}.${table} ${role}`))
    expect(psql(asAdmin(), `SELECT name FROM ${role}.plants WHERE id = 1;`).stdout).toBe('Monstera')
  })

  it.each([
    ['a table in public', 'CREATE TABLE public.intruder (id int);', 'permission denied for schema public'],
    ['a role', 'CREATE ROLE intruder;', 'permission denied to create role'],
    ['a database', 'CREATE DATABASE intruder;', 'permission denied to create database']
  ])('keeps the role from creating %s', (_what, sql, refusal) => {
    const attempt = psql(asRole(), sql)
    expect(attempt.status).not.toBe(0)
    expect(attempt.stderr).toContain(refusal)
  })

  it('backup-postgres, then restore-postgres, as the role: verify passes; the copy is ready, replays an old plant, stores a new one', async () => {
    const plants = ['{"id":2,"name":"Ficus","tag":"indoor"}', '{"id":9223372036854775807,"name":"int64 max"}']
    const server = await startServer({ API_TOKENS: TOKEN, DATABASE_URL: asRole() })
    try {
      for (const plant of plants) expect((await create(server.url, plant))[0]).toBe(200)
    } finally {
      server.child.kill('SIGTERM')
      await server.exited
    }
    const env = { DATABASE_URL: asRole(), BACKUP: join(work, 'plants.dump') }
    const backup = runBlock(forThisRun(docBlock('docs/production.md', 'backup-postgres')), work, env)
    expect([backup.status, backup.stderr]).toEqual([0, expect.stringMatching(/exported [3-9] plants/)])

    prepareDatabase(restored)
    const copy = urlFor(admin, restored, role)
    const restore = runBlock(forThisRun(docBlock('docs/production.md', 'restore-postgres')), work, { ...env, RESTORE_URL: copy })
    expect(restore.stderr).toBe('')
    expect(restore.stdout).toMatch(/\nidentical [3-9], missing 0, differing 0, refused 0\n$/)
    expect(restore.status).toBe(0)
    const tables = psql(urlFor(admin, restored), "SELECT DISTINCT schemaname || ' ' || tableowner FROM pg_tables WHERE tablename LIKE 'plant%';").stdout
    expect(tables).toBe(`${role} ${role}`)

    const restoredServer = await startServer({ API_TOKENS: TOKEN, DATABASE_URL: copy })
    try {
      await vi.waitFor(async () => expect((await fetch(`${restoredServer.url}/readyz`)).status).toBe(200), { timeout: 15000, interval: 100 })
      expect(await create(restoredServer.url, plants[0] as string)).toEqual([200, { name: 'Ficus', tag: 'indoor' }])
      expect((await create(restoredServer.url, '{"id":2,"name":"another"}'))[0]).toBe(409)
      expect(await create(restoredServer.url, '{"id":3,"name":"Pilea"}')).toEqual([200, { name: 'Pilea' }])
    } finally {
      restoredServer.child.kill('SIGTERM')
      await restoredServer.exited
    }
    expect(psql(urlFor(admin, restored), `SELECT name FROM ${role}.plants WHERE id = 3;`).stdout).toBe('Pilea')
  }, 120000)
})

/** POSTs a plant to a running service; resolves with the status and the reply. */
async function create (url: string, body: string): Promise<[number, unknown]> {
  const reply = await postOverHttp(url, TOKEN, body)
  return [reply.status, await reply.json()]
}

/** Runs a block of docs/production.md with bash in `cwd`, `plant-store` on the PATH as in the image. */
function runBlock (block: string, cwd: string, env: Record<string, string>): { status: number | null, stdout: string, stderr: string } {
  const bin = join(cwd, 'bin')
  mkdirSync(bin, { recursive: true })
  try { symlinkSync(fileURLToPath(new URL('../../dist/commands/plant-store.js', import.meta.url)), join(bin, 'plant-store')) } catch {}
  // --norc: bash reads bashrc when its standard input is a socket, as Node's pipes are.
  const ran = spawnSync('bash', ['--norc', '-euo', 'pipefail', '-c', block],
    { cwd, env: { PATH: `${bin}:${process.env.PATH}`, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 })
  return { status: ran.status, stdout: ran.stdout, stderr: ran.stderr }
}
