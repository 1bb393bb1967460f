import { createServer, connect, type Server, type Socket } from 'node:net'
import pg from 'pg'
import { freePort } from '../helpers.js'
import { findPgBouncer, startPgBouncer, type PgBouncer } from './pgbouncer.js'

/** The connection string with `search_path` set to one schema, the way a user would pick one. */
export function withSchema (url: string, schema: string): string {
  const parsed = new URL(url)
  parsed.searchParams.set('options', `-c search_path=${schema}`)
  return parsed.toString()
}

export interface TestSchemas {
  /**
   * A new, empty schema; returns a connection string whose connections use it. With `port`, the
   * connections reach the server through that port instead (a switchable proxy in front of it).
   */
  create (options?: { port?: number }): Promise<string>
  /** The schema a connection string from create() uses, for queries of the admin connection. */
  schemaOf (connectionString: string): string
  /** Runs a query as the admin connection (direct, to the server), e.g. to check what a store wrote. */
  query: pg.Pool['query']
  /** Drops every schema this run created (and stops its pooler). */
  dropAll (): Promise<void>
}

/** Each test run works in schemas of its own, so runs on one database do not see each other. */
export function createTestSchemas (url: string): TestSchemas {
  const admin = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 5000 })
  admin.on('error', () => {})
  const created: string[] = []
  const run = `plants_test_${process.pid}_${Date.now().toString(36)}`
  return {
    async create (options = {}) {
      const schema = `${run}_${created.length}`
      await admin.query(`CREATE SCHEMA ${schema}`)
      created.push(schema)
      const target = new URL(withSchema(url, schema))
      if (options.port !== undefined) target.host = `127.0.0.1:${options.port}`
      return target.toString()
    },
    schemaOf: (connectionString) => new URL(connectionString).searchParams.get('options')?.split('=')[1] ?? '',
    query: admin.query.bind(admin) as pg.Pool['query'],
    async dropAll () {
      try {
        for (const schema of created) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      } finally {
        await admin.end()
      }
    }
  }
}

/**
 * The same, through a PgBouncer of this run. The pooler refuses the `options` startup parameter, so
 * a schema is picked the way docs/storage.md tells users behind a pooler: a role whose default
 * `search_path` is that schema (`ALTER ROLE … SET search_path`), which also survives the
 * `DISCARD ALL` a session-mode pooler runs between clients. Each schema gets a database alias of its
 * own in the pooler (the alias is the schema's name) that logs in as that role; the stores under test
 * connect with a plain URL, as a user behind a pooler does.
 */
export function createPooledSchemas (url: string, bouncer: PgBouncer): TestSchemas {
  const admin = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 5000 })
  admin.on('error', () => {})
  const created: string[] = []
  const run = `plants_pooled_${process.pid}_${Date.now().toString(36)}`
  const server = new URL(url)
  const upstream = { host: server.hostname, port: Number(server.port || 5432), dbname: decodeURIComponent(server.pathname.slice(1)) }
  return {
    async create (options = {}) {
      const name = `${run}_${created.length}`
      created.push(name)
      await admin.query(`CREATE ROLE ${name} LOGIN`)
      await admin.query(`CREATE SCHEMA ${name} AUTHORIZATION ${name}`)
      await admin.query(`ALTER ROLE ${name} SET search_path = ${name}`)
      await bouncer.addDatabase(name, { ...upstream, port: options.port ?? upstream.port, user: name })
      const pooled = new URL(url)
      pooled.host = `127.0.0.1:${bouncer.port}`
      pooled.pathname = `/${name}`
      return pooled.toString()
    },
    schemaOf: (connectionString) => new URL(connectionString).pathname.slice(1),
    query: admin.query.bind(admin) as pg.Pool['query'],
    async dropAll () {
      try {
        await bouncer.stop()
        for (const name of created) {
          await admin.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`)
          await admin.query(`DROP ROLE IF EXISTS ${name}`)
        }
      } finally {
        await admin.end()
      }
    }
  }
}

/** Where a PostgreSQL suite runs: straight to the server, and through PgBouncer in transaction mode. */
export interface PostgresTarget {
  /** Goes into the suite's title. */
  name: string
  /** Why the suite is skipped, when it is. */
  skip?: string
  /** Per test file: starts what the target needs and returns its schemas. */
  open (): Promise<TestSchemas>
}

/**
 * The targets every PostgreSQL suite runs against, with the visible skip reasons. REQUIRE_POSTGRES=1
 * and REQUIRE_PGBOUNCER=1 (set by .ci/run) turn a skip into a failing test instead.
 */
export function postgresTargets (): PostgresTarget[] {
  const url = process.env.TEST_DATABASE_URL
  const binary = findPgBouncer()
  const noDatabase = url === undefined ? 'TEST_DATABASE_URL is not set' : undefined
  const noPooler = noDatabase ?? (binary === undefined ? 'pgbouncer is not installed (apt-get install pgbouncer, or set PGBOUNCER)' : undefined)
  // Transaction mode is what CI runs (the strictest); TEST_PGBOUNCER_POOL_MODE=session runs the same suites in session mode.
  const poolMode = process.env.TEST_PGBOUNCER_POOL_MODE === 'session' ? 'session' : 'transaction'
  return [
    { name: 'direct', ...(noDatabase === undefined ? {} : { skip: noDatabase }), open: async () => createTestSchemas(url as string) },
    {
      name: `through PgBouncer (${poolMode} mode)`,
      ...(noPooler === undefined ? {} : { skip: noPooler }),
      open: async () => {
        const server = new URL(url as string)
        const bouncer = await startPgBouncer({ binary: binary as string, poolMode, upstream: { host: server.hostname, port: Number(server.port || 5432) } })
        return createPooledSchemas(url as string, bouncer)
      }
    }
  ]
}

/** The failures that REQUIRE_POSTGRES / REQUIRE_PGBOUNCER ask for, in place of skipped suites. */
export function requiredButMissing (): string[] {
  const missing: string[] = []
  if (process.env.REQUIRE_POSTGRES === '1' && process.env.TEST_DATABASE_URL === undefined) {
    missing.push('REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set: the PostgreSQL tests would be skipped')
  }
  if (process.env.REQUIRE_PGBOUNCER === '1' && findPgBouncer() === undefined) {
    missing.push('REQUIRE_PGBOUNCER=1 but pgbouncer is not installed: the pooled PostgreSQL tests would be skipped')
  }
  if (process.env.REQUIRE_PGBOUNCER === '1' && process.env.TEST_DATABASE_URL === undefined) {
    missing.push('REQUIRE_PGBOUNCER=1 but TEST_DATABASE_URL is not set: the pooled PostgreSQL tests would be skipped')
  }
  return missing
}

/**
 * A TCP relay in front of the database that the test switches on and off: "the server is down"
 * (nothing listens, open connections are cut) and "it is back" on the same port.
 */
export interface SwitchableProxy {
  port: number
  up (): Promise<void>
  down (): Promise<void>
  /** A server that stalls: connections stay open (new ones too) and nothing passes either way until thaw(). */
  freeze (): void
  thaw (): void
  /** Connections accepted so far. */
  accepted (): number
}

export async function createSwitchableProxy (target: { host: string, port: number }): Promise<SwitchableProxy> {
  const port = await freePort()
  const sockets = new Set<Socket>()
  const pairs = new Set<[Socket, Socket]>()
  let server: Server | undefined
  let frozen = false
  let accepted = 0
  const flow = ([client, upstream]: [Socket, Socket]): void => { client.pipe(upstream).pipe(client) }
  const stop = ([client, upstream]: [Socket, Socket]): void => {
    client.unpipe(upstream)
    upstream.unpipe(client)
    client.pause()
    upstream.pause()
  }
  return {
    port,
    async up () {
      const next = createServer((client) => {
        accepted++
        const upstream = connect(target.port, target.host)
        const pair: [Socket, Socket] = [client, upstream]
        pairs.add(pair)
        for (const socket of pair) {
          sockets.add(socket)
          socket.on('error', () => {})
          socket.on('close', () => { sockets.delete(socket); pairs.delete(pair); client.destroy(); upstream.destroy() })
        }
        if (frozen) stop(pair)
        else flow(pair)
      })
      await new Promise<void>((resolve, reject) => next.once('error', reject).listen(port, '127.0.0.1', resolve))
      server = next
    },
    async down () {
      const current = server
      server = undefined
      for (const socket of sockets) socket.destroy()
      if (current !== undefined) await new Promise<void>((resolve) => current.close(() => resolve()))
    },
    freeze () {
      frozen = true
      for (const pair of pairs) stop(pair)
    },
    thaw () {
      frozen = false
      for (const pair of pairs) flow(pair)
    },
    accepted: () => accepted
  }
}
