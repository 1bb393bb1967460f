import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Env } from '../../src/config/env.js'
import { startServer } from '../e2e/server-process.js'
import { docBlock } from './blocks.js'

// docs/production.md's PostgreSQL role, run with psql as an operator would, in a database made for
// this run on TEST_DATABASE_URL's server (whose user is a superuser); then the service started as that
// role. Skips with the reason without TEST_DATABASE_URL or psql; REQUIRE_POSTGRES=1 makes that a failure.
const adminUrl = process.env.TEST_DATABASE_URL
const psqlMissing = spawnSync('psql', ['--version']).status !== 0
const unavailable = adminUrl === undefined ? 'TEST_DATABASE_URL is not set' : psqlMissing ? 'psql is not installed' : undefined
const TOKEN = 'production-docs-token'

if (unavailable !== undefined && process.env.REQUIRE_POSTGRES === '1') {
  it('runs: REQUIRE_POSTGRES=1 turns the skip into a failure', () => {
    expect.fail(`REQUIRE_POSTGRES=1 but ${unavailable}: the PostgreSQL role recipe would not be run`)
  })
}

/** Runs SQL with psql at `url`; resolves with its output and how it ended (never throws for an SQL error). */
function psql (url: string, sql: string): { status: number | null, stdout: string, stderr: string } {
  const result = spawnSync('psql', [url, '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-f', '-'], { input: sql, encoding: 'utf8', timeout: 30000 })
  return { status: result.status, stdout: result.stdout.trim(), stderr: result.stderr }
}

/** `url` pointing at another database, as another user (with the recipe's password) when given. */
function urlFor (url: string, database: string, user?: string): string {
  const target = new URL(url)
  target.pathname = `/${database}`
  if (user !== undefined) {
    target.username = user
    target.password = 'change-me'
  }
  return target.href
}

describe.skipIf(unavailable !== undefined)(unavailable === undefined
  ? 'docs/production.md: a PostgreSQL role for the service'
  : `docs/production.md's PostgreSQL role skipped: ${unavailable}`, () => {
  // Roles belong to the whole server, which others share: this run's role and database have names of their own.
  const suffix = randomBytes(4).toString('hex')
  const role = `plant_store_${suffix}`
  const database = `plants_${suffix}`
  const admin = adminUrl ?? ''
  const asAdmin = (): string => urlFor(admin, database)
  const asRole = (): string => urlFor(admin, database, role)

  beforeAll(() => {
    const created = psql(admin, `CREATE DATABASE ${database};`)
    expect(created.stderr).toBe('')
    const recipe = docBlock('docs/production.md', 'postgres-role')
      .replace(/\bplant_store\b/g, role)
      .replace(/\bplants\b/g, database)
    const ran = psql(asAdmin(), recipe)
    expect([ran.status, ran.stderr]).toEqual([0, ''])
  })

  afterAll(() => {
    psql(admin, `DROP DATABASE IF EXISTS ${database} WITH (FORCE);`)
    psql(admin, `DROP ROLE IF EXISTS ${role};`)
  })

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
      const reply = await fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: '{"id":1,"name":"Monstera"}'
      })
      expect([reply.status, await reply.json()]).toEqual([200, { name: 'Monstera' }])
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
})
