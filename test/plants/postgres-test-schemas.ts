import { createServer, connect, type Server, type Socket } from 'node:net'
import pg from 'pg'

/** The connection string with `search_path` set to one schema, the way a user would pick one. */
export function withSchema (url: string, schema: string): string {
  const parsed = new URL(url)
  parsed.searchParams.set('options', `-c search_path=${schema}`)
  return parsed.toString()
}

export interface TestSchemas {
  /** A new, empty schema; returns a connection string that uses it. */
  create (): Promise<string>
  /** Runs a query as the admin connection, e.g. to check what a store wrote. */
  query: pg.Pool['query']
  /** Drops every schema this run created. */
  dropAll (): Promise<void>
}

/** Each test run works in schemas of its own, so runs on one database do not see each other. */
export function createTestSchemas (url: string): TestSchemas {
  const admin = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 5000 })
  admin.on('error', () => {})
  const created: string[] = []
  const run = `plants_test_${process.pid}_${Date.now().toString(36)}`
  return {
    async create () {
      const schema = `${run}_${created.length}`
      await admin.query(`CREATE SCHEMA ${schema}`)
      created.push(schema)
      return withSchema(url, schema)
    },
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
 * A TCP relay in front of the database that the test switches on and off: "the server is down"
 * (nothing listens, open connections are cut) and "it is back" on the same port.
 */
export interface SwitchableProxy {
  port: number
  up (): Promise<void>
  down (): Promise<void>
}

export async function createSwitchableProxy (target: { host: string, port: number }): Promise<SwitchableProxy> {
  const port = await freePort()
  const sockets = new Set<Socket>()
  let server: Server | undefined
  return {
    port,
    async up () {
      const next = createServer((client) => {
        const upstream = connect(target.port, target.host)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on('error', () => {})
          socket.on('close', () => { sockets.delete(socket); client.destroy(); upstream.destroy() })
        }
        client.pipe(upstream).pipe(client)
      })
      await new Promise<void>((resolve, reject) => next.once('error', reject).listen(port, '127.0.0.1', resolve))
      server = next
    },
    async down () {
      const current = server
      server = undefined
      for (const socket of sockets) socket.destroy()
      if (current !== undefined) await new Promise<void>((resolve) => current.close(() => resolve()))
    }
  }
}

export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}
