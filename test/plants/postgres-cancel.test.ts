import pg from 'pg'
import { describe, expect, it, onTestFinished } from 'vitest'
import { cancel } from '../../src/plants/postgres-cancel.js'

// The one place the store reads past pg's documented surface (the backend key pg keeps on a client, for
// the protocol's CancelRequest): this fails when pg renames, retypes or stops keeping it.

const url = process.env.TEST_DATABASE_URL
if (process.env.REQUIRE_POSTGRES === '1' && url === undefined) {
  describe('CancelRequest', () => {
    it('runs: REQUIRE_POSTGRES=1 turns a skip into a failure', () => { expect.fail('REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set') })
  })
}
if (url === undefined) console.warn('PostgreSQL cancel test skipped: TEST_DATABASE_URL is not set (CI sets REQUIRE_POSTGRES=1)')

describe.skipIf(url === undefined)(url === undefined ? 'PostgreSQL cancel test skipped: TEST_DATABASE_URL is not set' : 'CancelRequest (postgres-cancel.ts)', () => {
  async function connected (): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: url })
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

  it('sends nothing for a client that never connected, and never rejects', async () => {
    await expect(cancel(new pg.Client({ connectionString: url }), 1000)).resolves.toBeUndefined()
  })
})
