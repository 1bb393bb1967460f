import pg from 'pg'
import { StoreOutcomeUnknownError, StoreUnavailableError } from '../errors.js'
import { readOnly, refusedByServer, serverRefused, writeFailure } from './postgres-failures.js'
import type { HostPools } from './postgres-hosts.js'

/**
 * Before its answer deadline, a statement the server has not answered is cancelled (CancelRequest),
 * this long ahead: time for the server to act on it and answer, so the answer says what happened.
 */
export const CANCEL_LEAD_MS = 400

/** After the answer deadline, the connection waits this long more for the server's answer (cancels re-sent each second), then is closed. */
const HOLD_MS = 10_000
const RECANCEL_MS = 1000

/** The statements of a store, each answered by a deadline however the server stalls (README, High availability). */
export interface Session {
  /**
   * Runs `SET LOCAL statement_timeout = …; <statements>` as one simple-protocol message. PostgreSQL
   * runs the statements of one message as one implicit transaction: committed when the last one
   * succeeds, rolled back when one fails, and the connection is idle again either way (no ROLLBACK
   * to send, nothing a pooler must hold). SET LOCAL holds inside it, and the statement timeout
   * applies to each statement of such a message (PostgreSQL 13 and later). One message out and one
   * reply back: less work for the driver, a pooler and the server than an explicit transaction
   * (bench/results/reference.md). Resolves with the last statement's result.
   */
  oneMessage<Row extends pg.QueryResultRow> (statements: string, deadline: number): Promise<pg.QueryResult<Row>>
  /** The same with a named prepared statement, which needs the extended protocol: BEGIN and the timeouts, the statement, COMMIT, pipelined. */
  transaction<Row extends pg.QueryResultRow> (statement: pg.QueryConfig, deadline: number): Promise<pg.QueryResult<Row>>
  /** A connection's failure: drops it unless the server refused cleanly (postgres-failures.ts). */
  settle (pool: pg.Pool, client: pg.PoolClient, failure: unknown): void
  /** Closes the connections still waiting for an answer the service has given up on. */
  close (): Promise<void>
}

const neverSent = new WeakSet<object>()

/** True for a failure before anything was sent: no connection could be had (the server is down, the pool is full). */
export function notConnected (error: unknown): boolean {
  return typeof error === 'object' && error !== null && neverSent.has(error)
}

/**
 * Statements with an answer deadline. The server's statement timeout bounds a statement's work; what
 * it does not bound (a commit waiting for a synchronous standby, a server that stalls, a lost
 * network) the client does: CANCEL_LEAD_MS before the deadline it sends the protocol's
 * CancelRequest (a pooler forwards it), so the server stops too and no backend is left waiting for a
 * client that left. The caller gets its answer at the deadline at the latest; the connection is
 * kept until the server answers the cancelled statement (re-cancelling each second), so this
 * process never holds more server backends than its pool, and is closed only if no answer comes
 * within HOLD_MS.
 */
export function createSession (hosts: HostPools, statementTimeoutMs: number): Session {
  const setStatementTimeout = `SET LOCAL statement_timeout = ${statementTimeoutMs}`
  const begin = `BEGIN; ${setStatementTimeout}; SET LOCAL idle_in_transaction_session_timeout = ${statementTimeoutMs}`
  const held = new Set<{ client: pg.PoolClient, done: Promise<void> }>()

  /** A connection by the deadline's cancel time; otherwise a StoreUnavailableError: nothing was sent, so nothing was stored. */
  async function acquire (deadline: number): Promise<{ pool: pg.Pool, client: pg.PoolClient }> {
    const connecting = hosts.connect()
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_resolve, reject) => {
      const budget = deadline - CANCEL_LEAD_MS - performance.now()
      timer = setTimeout(() => reject(new Error(`timed out after ${Math.max(0, Math.round(budget))} ms waiting for a connection to the database`)), budget)
    })
    try {
      return await Promise.race([connecting, late])
    } catch (error) {
      // A connection that comes too late goes back to the pool unused.
      connecting.then(({ client }) => { client.release() }, ignore)
      const failure = new StoreUnavailableError({ cause: error })
      neverSent.add(failure)
      throw failure
    } finally {
      clearTimeout(timer)
    }
  }

  /**
   * A server's refusal (timeout, lock, constraint) leaves a usable, idle connection. Anything else
   * (reset, a pooler's report) may not, and a read-only server (25006: an old primary back as a
   * standby) must not get the next writes: the pool drops that connection, and with several hosts
   * the next batch selects a host again.
   */
  function settle (pool: pg.Pool, client: pg.PoolClient, failure: unknown): void {
    const drop = failure !== undefined && (!serverRefused(failure) || readOnly(failure))
    client.release(drop)
    if (drop) hosts.lost(pool)
  }

  /**
   * Waits for `work` (never rejecting) until the deadline, cancelling it CANCEL_LEAD_MS before. No
   * answer by the deadline: an unknown outcome now, and the connection held until the server answers.
   */
  async function exchange<T> (pool: pg.Pool, client: pg.PoolClient, work: Promise<T>, deadline: number): Promise<{ value: T, cancelled: boolean, release: (failure: unknown) => void }> {
    let cancelling: Promise<void> | undefined
    let cancelTimer: NodeJS.Timeout | undefined
    let lateTimer: NodeJS.Timeout | undefined
    const late = new Promise<undefined>((resolve) => {
      cancelTimer = setTimeout(() => { cancelling = cancel(client) }, deadline - CANCEL_LEAD_MS - performance.now())
      lateTimer = setTimeout(() => { resolve(undefined) }, deadline - performance.now())
    })
    const answer = await Promise.race([work.then((value) => ({ value })), late])
    clearTimeout(cancelTimer)
    clearTimeout(lateTimer)
    if (answer !== undefined) {
      // A cancel still on its way could hit the connection's next statement: the connection goes
      // back to the pool only once the server has closed the cancel's connection (it has acted on it).
      const sent = cancelling
      const release = (failure: unknown): void => {
        if (sent === undefined) settle(pool, client, failure)
        else void sent.then(() => { settle(pool, client, failure) })
      }
      return { value: answer.value, cancelled: sent !== undefined, release }
    }
    hold(pool, client, work)
    // No answer even to a cancel: with several hosts, the next batch selects one again.
    hosts.lost(pool)
    throw new StoreOutcomeUnknownError({ cause: new Error('timed out: the database answered neither the statement nor its cancel by the deadline') })
  }

  function hold (pool: pg.Pool, client: pg.PoolClient, work: Promise<unknown>): void {
    const recancel = setInterval(() => { void cancel(client) }, RECANCEL_MS)
    // The socket closed: the pending statement fails, which settles the connection below.
    const giveUp = setTimeout(() => { client.connection.stream.destroy() }, HOLD_MS)
    const entry = {
      client,
      done: work.then(() => {
        clearInterval(recancel)
        clearTimeout(giveUp)
        client.removeListener('error', ignore)
        // Whatever the answer, the service has given up on this statement: a fresh connection next.
        settle(pool, client, new Error('answered after its deadline'))
        held.delete(entry)
      })
    }
    held.add(entry)
  }

  return {
    async oneMessage<Row extends pg.QueryResultRow> (statements: string, deadline: number) {
      const { pool, client } = await acquire(deadline)
      client.on('error', ignore)
      const sent = client.query(`${setStatementTimeout}; ${statements}`) as unknown as Promise<Array<pg.QueryResult<Row>>>
      const { value, cancelled, release } = await exchange(pool, client, sent.then((results) => ({ results }), (error: unknown) => ({ error })), deadline)
      client.removeListener('error', ignore)
      if ('error' in value) {
        release(value.error)
        // One implicit transaction: a refusal rolled all of it back; anything else may have committed.
        throw writeFailure(value.error, refusedByServer(value.error))
      }
      release(undefined)
      // A success after the cancel: a commit the cancel cut short (a synchronous standby gone) is
      // kept locally and may be missing on the standby: not an acknowledgement.
      if (cancelled) throw new StoreOutcomeUnknownError({ cause: new Error('answered after a cancel') })
      return value.results.at(-1) as pg.QueryResult<Row>
    },

    async transaction<Row extends pg.QueryResultRow> (statement: pg.QueryConfig, deadline: number) {
      const { pool, client } = await acquire(deadline)
      client.on('error', ignore)
      // Every promise is awaited (allSettled), so a statement that fails after the first cannot go unhandled.
      const sent = Promise.allSettled([client.query(begin), client.query<Row>(statement), client.query('COMMIT')])
      const { value: [opened, result, committed], cancelled, release } = await exchange(pool, client, sent, deadline)
      client.removeListener('error', ignore)
      const failure = [opened, result, committed].find((outcome) => outcome.status === 'rejected')
      // COMMIT of a failed transaction rolls it back: so does a refused COMMIT, unless BEGIN failed
      // (then the statement ran on its own, and may have committed).
      release(failure?.reason)
      if (failure !== undefined) {
        const refused = (result.status === 'rejected' && refusedByServer(result.reason)) ||
          (opened.status === 'fulfilled' && result.status === 'fulfilled' && refusedByServer(failure.reason))
        throw writeFailure(failure.reason, refused)
      }
      if (cancelled) throw new StoreOutcomeUnknownError({ cause: new Error('answered after a cancel') })
      return (result as PromiseFulfilledResult<pg.QueryResult<Row>>).value
    },

    settle,

    async close () {
      for (const { client } of held) client.connection.stream.destroy()
      await Promise.all([...held].map((entry) => entry.done))
    }
  }
}

/**
 * The protocol's CancelRequest for the statement running on `client`'s connection: a connection of
 * its own carries the backend's key (pg's Connection writes the message, as pg's Client#cancel
 * does), and the server (or the pooler, which forwards it) closes it once done. Sent in clear text,
 * as libpq does by default; it carries no credentials. Never throws.
 */
function cancel (client: pg.PoolClient): Promise<void> {
  const { processID, secretKey, host, port } = client as unknown as { processID: number | null, secretKey: number | null, host: string, port: number }
  if (processID === null || secretKey === null) return Promise.resolve()
  const connection = new pg.Connection() as pg.Connection & {
    connect (port: number | string, host?: string): void
    cancel (processID: number, secretKey: number): void
  }
  connection.on('error', ignore)
  // Resolves once the server (or pooler) has closed it, or after HOLD_MS without an answer.
  const done = new Promise<void>((resolve) => {
    // Unref'd: a cancel never holds the process up at exit.
    const timer = setTimeout(() => { connection.stream.destroy() }, HOLD_MS).unref()
    connection.once('end', () => { clearTimeout(timer); resolve() })
  })
  connection.once('connect', () => { connection.cancel(processID, secretKey) })
  if (host.startsWith('/')) connection.connect(`${host}/.s.PGSQL.${port}`)
  else connection.connect(port, host)
  return done
}

/** A checked-out client reports a lost connection as an event too; the query's rejection carries it. */
function ignore (): void {}
