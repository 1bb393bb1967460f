import { existsSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import pg from 'pg'
import { describe, expect, it, onTestFinished } from 'vitest'
import { cancel } from '../../src/sql/postgres-cancel.js'

// The one place the store reads past pg's documented surface (the backend key pg keeps on a client, for
// the protocol's CancelRequest): this fails when pg renames, retypes or stops keeping it.

const url = process.env.TEST_DATABASE_URL
/** Debian's PostgreSQL socket: where the Unix-socket case runs (skipped where there is none). */
const SOCKET = '/var/run/postgresql/.s.PGSQL.5432'
if (process.env.REQUIRE_POSTGRES === '1' && url === undefined) {
  describe('CancelRequest', () => {
    it('runs: REQUIRE_POSTGRES=1 turns a skip into a failure', () => { expect.fail('REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set') })
  })
}
if (url === undefined) console.warn('PostgreSQL cancel test skipped: TEST_DATABASE_URL is not set (CI sets REQUIRE_POSTGRES=1)')

describe.skipIf(url === undefined)(url === undefined
  ? 'PostgreSQL cancel test skipped: TEST_DATABASE_URL is not set'
  : 'CancelRequest (postgres-cancel.ts)', () => {
  async function connected (config: pg.ClientConfig = { connectionString: url }): Promise<pg.Client> {
    const client = new pg.Client(config)
    client.on('error', () => {})
    await client.connect()
    onTestFinished(() => client.end())
    return client
  }

  it('pg keeps the backend\'s process id and secret key on the client, as numbers', async () => {
    const client = await connected()
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
    expect(client).toHaveProperty('processID', rows[0]?.pid)
    expect(client).toHaveProperty('secretKey', expect.any(Number))
  })

  it('cancels the statement running on a client (57014), and resolves once the server has closed the request', async () => {
    const client = await connected()
    const started = performance.now()
    const sleeping = client.query('SELECT pg_sleep(30)')
    const failed = sleeping.catch((error: unknown) => error)
    await new Promise((resolve) => setTimeout(resolve, 200))
    await cancel(client, 5000)
    expect(await failed).toHaveProperty('code', '57014')
    expect(performance.now() - started).toBeLessThan(5000)
    // The connection is usable afterwards: a cancel ends the statement, not the session.
    expect((await client.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
  })

  it('reaches a server on a Unix socket too (host given as its folder)', { skip: !existsSync(SOCKET) }, async () => {
    const client = await connected({ host: '/var/run/postgresql', port: 5432, user: new URL(url as string).username })
    const failed = client.query('SELECT pg_sleep(30)').catch((error: unknown) => error)
    await new Promise((resolve) => setTimeout(resolve, 200))
    await cancel(client, 5000)
    expect(await failed).toHaveProperty('code', '57014')
  })

  it('sends nothing for a client that never connected (no backend key), and never rejects', async () => {
    let connections = 0
    const listener = createServer((socket) => { connections++; socket.destroy() })
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
    onTestFinished(() => { listener.close() })
    const { port } = listener.address() as AddressInfo
    await expect(cancel(new pg.Client({ host: '127.0.0.1', port }), 1000)).resolves.toBeUndefined()
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(connections).toBe(0)
  })
})
