import pg from 'pg'
import { StoreFullError, StoreOutcomeUnknownError, StoreUnavailableError } from '../errors.js'

// How a PostgreSQL failure is named: nothing stored for sure (503 "unavailable", or 507), or the
// write was sent and its answer lost (503 "outcome unknown"). README, High availability.

/**
 * SQLSTATE classes of a server's refusal after which nothing of the statement's transaction is
 * committed: data (22), constraint (23), transaction state (25, with 25006 read-only), rollback (40:
 * serialization, deadlock), syntax and access (42), check option (44), resources (53: disk full, out
 * of memory), limits (54), object state (55: 55P03 lock not available); and 57014, a statement
 * timeout or cancel. Not class 08 (what PgBouncer reports when the server connection broke, whatever
 * the server did), 57P01-57P05 (a shutdown or a crash, possibly after the commit), XX or 58.
 */
const REFUSED = /^(?:2[235]|4[024]|5[345])[0-9A-Z]{3}$|^57014$/

/**
 * PgBouncer's own errors for a query it never passed to a server: it had no server connection to give
 * it (PgBouncer's check_fast_fail, the wait for a server, a failed server login). It closes the client
 * connection after them.
 */
const POOLER_NEVER_SENT = /^(?:query_wait_timeout|pgbouncer cannot connect to server|server login has been failing, try again later \(server_login_retry\))$/

/** The server answered the statement with an error that rolled it back, and the connection is usable. */
export function serverRefused (error: unknown): boolean {
  return error instanceof pg.DatabaseError && REFUSED.test(error.code ?? '')
}

/**
 * True when nothing was stored for sure: the server refused the statement, a pooler never passed it
 * on, or pg refused to send it ("… is not queryable", raised before anything is written).
 */
export function refusedByServer (error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return serverRefused(error) || POOLER_NEVER_SENT.test(error.message)
  return error instanceof Error && / is not queryable$/.test(error.message)
}

/** 25006: the server is (now) read-only, an old primary that came back as a standby. */
export function readOnly (error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === '25006'
}

/**
 * The named error for a write that failed: disk_full is a 507; a refusal (nothing stored) a 503 the
 * client may retry; anything else after the write was sent (a connection reset or ended by a crash,
 * no answer by the deadline) a 503 whose outcome is unknown.
 */
export function writeFailure (error: unknown, refused: boolean): Error {
  if (!refused) return new StoreOutcomeUnknownError({ cause: error })
  if ((error as { code?: unknown }).code === '53100') return new StoreFullError({ cause: error })
  return new StoreUnavailableError({ cause: error })
}
