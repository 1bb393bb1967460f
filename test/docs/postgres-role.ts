import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, expect } from 'vitest'
import { docBlock } from './blocks.js'

/** Runs SQL with psql at `url`; resolves with its output and how it ended (never throws for an SQL error). */
export function psql (url: string, sql: string): { status: number | null, stdout: string, stderr: string } {
  const result = spawnSync('psql', [url, '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-f', '-'], { input: sql, encoding: 'utf8', timeout: 30000 })
  return { status: result.status, stdout: result.stdout.trim(), stderr: result.stderr }
}

/** `url` pointing at another database, as another user (with the recipe's password) when given. */
export function urlFor (url: string, database: string, user?: string): string {
  const target = new URL(url)
  target.pathname = `/${database}`
  if (user !== undefined) {
    target.username = user
    target.password = 'change-me'
  }
  return target.href
}

export interface PostgresRole {
  /** The role's name for this run, in place of the page's `plant_store`. */
  role: string
  /** A database made for this run and prepared for the role. */
  database: string
  /** The database as the superuser of `adminUrl`. */
  asAdmin: () => string
  /** The database as the role, with the page's password. */
  asRole: () => string
  /** A block of docs/production.md with the page's role name replaced by this run's. */
  forThisRun: (block: string) => string
  /** What a superuser runs for another database the role is to use (dropped with the rest). */
  prepareDatabase: (name: string) => void
}

/**
 * docs/production.md's PostgreSQL role, made as the page says with psql before the enclosing describe's tests
 * (`postgres-role`, then `createdb` and `postgres-database` in a database for it), and dropped after them. Roles
 * belong to the whole server, which others share: this run's role and databases have names of their own.
 */
export function usePostgresRole (adminUrl: string): PostgresRole {
  const suffix = randomBytes(4).toString('hex')
  const role = `plant_store_${suffix}`
  const database = `plants_${suffix}`
  const databases = [database]
  const forThisRun = (block: string): string => block.replace(/\bplant_store\b/g, role)

  function prepareDatabase (name: string): void {
    if (!databases.includes(name)) databases.push(name)
    const created = psql(adminUrl, `CREATE DATABASE ${name};`)
    expect(created.stderr).toBe('')
    const ran = psql(urlFor(adminUrl, name), forThisRun(docBlock('docs/production.md', 'postgres-database')))
    expect([ran.status, ran.stderr]).toEqual([0, ''])
  }

  beforeAll(() => {
    const ran = psql(adminUrl, forThisRun(docBlock('docs/production.md', 'postgres-role')))
    expect([ran.status, ran.stderr]).toEqual([0, ''])
    prepareDatabase(database)
  })

  afterAll(() => {
    for (const name of databases) psql(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE);`)
    psql(adminUrl, `DROP ROLE IF EXISTS ${role};`)
  })

  return {
    role,
    database,
    asAdmin: () => urlFor(adminUrl, database),
    asRole: () => urlFor(adminUrl, database, role),
    forThisRun,
    prepareDatabase
  }
}
