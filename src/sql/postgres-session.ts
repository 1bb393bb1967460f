import pg from 'pg'
import { StoreFullError, StoreOutcomeUnknownError, StoreUnavailableError } from '../errors.js'
import type { FailureLogger } from '../observability/failure-log.js'
import { cancel } from './postgres-cancel.js'
import { awaitAtMost, createHosts, noop } from './postgres-hosts.js'

/** A statement still running at its timeout is cancelled and answered within this (the rest of a second: the reply). */
const CANCEL_ANSWER_MS = 600
/** After that, a connection waits in quarantine this long for the answer (cancelled again meanwhile), then closes. */
const QUARANTINE_MS = 10_000

// SQLSTATEs after which nothing of the transaction is committed: classes 22, 23, 25, 26, 40, 42, 44, 53, 54, 55 and
// 57014 (timeout, cancel). Not 08, 57P0x, 58 or XX: a lost connection or a crash may follow a commit.
const ROLLED_BACK = /^(?:2[2356]|4[024]|5[345])[0-9A-Z]{3}$|^57014$/
// PgBouncer's own errors for a query it never passed to a server.
const NEVER_SENT = /^(?:query_wait_timeout|pgbouncer cannot connect to server|server login has been failing)/

const rolledBack = (error: unknown): boolean => error instanceof pg.DatabaseError && ROLLED_BACK.test(error.code ?? '')
/** Nothing was stored for sure: the server rolled it back, a pooler never passed it on, or pg never sent it. */
const nothingStored = (error: unknown): boolean => error instanceof pg.DatabaseError
  ? rolledBack(error) || NEVER_SENT.test(error.message)
  : error instanceof Error && / is not queryable$/.test(error.message)

export const unavailable = (reason: string): Error => new StoreUnavailableError({ cause: new Error(reason) })

/**
 * The store's statements on the host that takes writes, each answered within CANCEL_ANSWER_MS of its timeout
 * however the server stalls: a statement still running then gets the protocol's cancel. A connection whose
 * statement was given up on stays out of the pool, cancelled again a second after each cancel, until the server
 * answers, QUARANTINE_MS pass or the store closes, so there are never more backends than the pool.
 */
export function createSession (url: string, max: number, connectTimeoutMs: number, log: FailureLogger) {
  const hosts = createHosts(url, { max, connectionTimeoutMillis: connectTimeoutMs }, log)
  const quarantined = new Set<pg.PoolClient>()
  // Released with an error, the client is closed by the pool, and a statement still pending fails.
  const release = (client: pg.PoolClient): void => { if (quarantined.delete(client)) client.release(true) }

  /**
   * `statement` as one message: one implicit transaction, one round trip through any pooler. No connection by the
   * timeout (also when queued too long) is StoreUnavailableError: nothing was sent. After a cancel, a success is no
   * acknowledgement: a commit whose wait for the standby was cancelled is kept on the primary alone.
   */
  async function query<Row extends pg.QueryResultRow> (statement: pg.QueryConfig, timeoutAt: number):
  Promise<pg.QueryResult<Row>> {
    if (timeoutAt <= performance.now()) throw unavailable('timed out queued behind statements not yet answered')
    const attempt = hosts.connect()
    const connected = await awaitAtMost(attempt, timeoutAt - performance.now()).catch((cause: unknown) => ({ cause }))
    if (connected === undefined || 'cause' in connected) {
      attempt.then(({ client }) => { client.release() }, noop)
      throw new StoreUnavailableError({ cause: connected?.cause ?? new Error('timed out waiting for a connection') })
    }
    const { host, client } = connected
    const reply = client.query<Row>(statement).then((result) => ({ result }), (error: unknown) => ({ error }))
    const onTime = await awaitAtMost(reply, timeoutAt - performance.now())
    const cancelSent = onTime === undefined ? cancel(client, QUARANTINE_MS) : undefined
    const outcome = onTime ?? await awaitAtMost(reply, timeoutAt + CANCEL_ANSWER_MS - performance.now())
    if (outcome === undefined) {
      quarantined.add(client)
      // Never two cancels at once: a frozen server is not left a queue of them to work through when it wakes.
      void cancelSent?.then(async () => {
        while (await awaitAtMost(reply, 1000) === undefined) await cancel(client, QUARANTINE_MS)
      })
      void awaitAtMost(reply, QUARANTINE_MS).then(() => { release(client) })
      hosts.chooseAgain(host)
      throw new StoreOutcomeUnknownError({ cause: new Error('no answer to the statement or its cancel in time') })
    }
    const failure = 'error' in outcome ? outcome.error : undefined
    const code = failure instanceof pg.DatabaseError ? failure.code : undefined
    // Back to the pool after a clean rollback; closed after anything else, a read-only server (25006) or a cancel (sent
    // on a connection of its own, it could reach this one's next statement).
    const drop = failure !== undefined && (!rolledBack(failure) || code === '25006')
    client.release(drop || onTime === undefined)
    if (drop) hosts.chooseAgain(host)
    if ('result' in outcome && onTime !== undefined) return outcome.result
    const StoreError = !nothingStored(failure)
      ? StoreOutcomeUnknownError
      : code === '53100' ? StoreFullError : StoreUnavailableError
    throw new StoreError({ cause: failure ?? new Error('answered after a cancel') })
  }

  return {
    query,
    stats: () => {
      const { totalCount = 0, idleCount = 0, waitingCount = 0 } = hosts.inUse()?.pool ?? {}
      return { poolConnections: totalCount, poolIdleConnections: idleCount, poolWaitingRequests: waitingCount }
    },
    async end () {
      for (const client of quarantined) release(client)
      await hosts.end()
    }
  }
}
