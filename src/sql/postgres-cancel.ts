import { connect } from 'node:net'
import type pg from 'pg'

/**
 * The protocol's CancelRequest (PostgreSQL, "Canceling Requests in Progress") for the statement running
 * on `client`: a pooler forwards it, and it reaches a backend that waits for a synchronous standby.
 * pg documents no cancel, so this reads the backend key pg keeps on the client (`processID`, `secretKey`,
 * undeclared in its types): the one reach past pg's surface, pinned by test/plants/postgres-cancel.test.ts.
 * Resolves once the server has closed the cancel's connection (it has acted), or after `ms`. Never rejects.
 */
export function cancel (client: pg.Client, ms: number): Promise<void> {
  const { processID, secretKey, host, port } = client as pg.Client & { processID?: unknown, secretKey?: unknown }
  if (typeof processID !== 'number' || typeof secretKey !== 'number') return Promise.resolve()
  // Four int32s: the length, the cancel request code, the backend's key.
  const message = Buffer.alloc(16)
  for (const [index, value] of [16, 80877102, processID, secretKey].entries()) message.writeInt32BE(value, index * 4)
  // In clear text, as libpq sends it by default: it carries no credentials.
  const where = host.startsWith('/') ? { path: `${host}/.s.PGSQL.${port}` } : { host, port }
  const socket = connect({ ...where, signal: AbortSignal.timeout(ms) }, () => { socket.write(message) })
  socket.on('error', () => {})
  return new Promise((resolve) => { socket.once('close', () => { resolve() }) })
}
