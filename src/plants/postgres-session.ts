import pg from 'pg'
import { StoreFullError, StoreOutcomeUnknownError, StoreUnavailableError } from '../errors.js'
import { ConfigError } from '../lib/config-error.js'
import { summarizeCause } from '../lib/failure-log.js'
import { cancel } from './postgres-cancel.js'

/** A statement still running at its timeout is cancelled and answered within this (the rest of a second: the reply). */
const CANCEL_ANSWER_MS = 600
/** After that, a connection waits in quarantine this long for the answer (re-cancelled each second), then closes. */
const QUARANTINE_MS = 10_000

// SQLSTATEs after which nothing of the transaction is committed: classes 22, 23, 25, 26 (a statement name a pooler's
// server does not know), 40, 42, 44, 53, 54, 55 and 57014 (timeout, cancel). Not 08, 57P0x, 58 or XX: a lost
// connection or a crash may follow a commit.
const REFUSED = /^(?:2[2356]|4[024]|5[345])[0-9A-Z]{3}$|^57014$/
// PgBouncer's own errors for a query it never passed to a server.
const NEVER_SENT = /^(?:query_wait_timeout|pgbouncer cannot connect to server|server login has been failing)/

const serverRefused = (error: unknown): boolean => error instanceof pg.DatabaseError && REFUSED.test(error.code ?? '')
/** Nothing was stored for sure: the server refused, a pooler never passed it on, or pg never sent it. */
const nothingStored = (error: unknown): boolean => error instanceof pg.DatabaseError
  ? serverRefused(error) || NEVER_SENT.test(error.message)
  : error instanceof Error && / is not queryable$/.test(error.message)

const neverSent = new WeakSet<object>()
/** A failure before anything was sent: no connection could be had (the server is down, the pool is full). */
export const notConnected = (error: unknown): boolean => error instanceof Error && neverSent.has(error)

interface Host { label: string, url: string }

/**
 * Reads DATABASE_URL as libpq does, with one host or several (`postgres://u@h1:5432,h2/db`), into one URL
 * per host. Errors name DATABASE_URL and a host's position, never a part of the URL (it may hold a password).
 */
export function parsePostgresUrl (url: string): { hosts: Host[], attrs: string } {
  const parts = /^(postgres(?:ql)?:\/\/)([^/?#]*@)?([^/?#]*)(.*)$/s.exec(url)
  if (parts === null) throw new ConfigError('DATABASE_URL: not a postgres:// URL')
  const [, scheme = '', userinfo = '', hostList = '', path = ''] = parts
  const params = new URLSearchParams(/\?([^#]*)/.exec(path)?.[1])
  const attrs = params.get('target_session_attrs') ?? 'any'
  if (!/^(?:any|read-write|primary)$/.test(attrs)) {
    throw new ConfigError(/^(?:read-only|standby|prefer-standby)$/.test(attrs)
      ? `DATABASE_URL: target_session_attrs=${attrs} would send the service's writes to a read-only server; ` +
        'use read-write, primary or any'
      : 'DATABASE_URL: target_session_attrs must be read-write, primary or any')
  }
  // pg reads every sslmode as verify-full unless told to read it as libpq (and psql) does.
  const libpq = params.has('sslmode') && !params.has('uselibpqcompat')
  const rest = libpq ? path.replace(/(\?[^#]*)/, '$1&uselibpqcompat=true') : path
  const names = hostList.split(',')
  const invalid = (problem: string, characters: string): ConfigError =>
    new ConfigError(`DATABASE_URL: ${problem} (a password holding ${characters} must be percent-encoded)`)
  const hosts = names.map((name, index) => {
    const where = names.length === 1 ? 'the host' : `host ${index + 1} of ${names.length}`
    const port = /^(?:\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(name)
    // An empty host (a Unix socket from ?host=, or PGHOST) is pg's to resolve, with one host only.
    if ((port === null && !(name === '' && names.length === 1)) || Number(port?.[1] ?? 0) > 65535) {
      throw invalid(`${where} is not host or host:port`, '/ ? # @ ,')
    }
    const hostUrl = `${scheme}${userinfo}${name}${rest}`
    // pg parses it with URL, and reads `user@/db` (no host) the same way.
    if (!URL.canParse(hostUrl.replace('@/', '@x/'))) throw invalid(`not a valid URL at ${where}`, '/ ? # @ : %')
    return { label: name === '' ? 'default host' : port?.[1] === undefined ? `${name}:5432` : name, url: hostUrl }
  })
  return { hosts, attrs }
}

/** A pool per host, the one that takes writes selected on demand; the others are ended as they are left. */
function createHostPool (url: string, max: number, connectTimeoutMs: number, selected: (label: string) => void) {
  const { hosts, attrs } = parsePostgresUrl(url)
  // One host that any server will do for is never selected again: its pool stays for the process.
  const singleHost = hosts.length === 1 && attrs === 'any'
  // What every pooler passes: no startup parameter but application_name, no session state. No query_timeout:
  // the session cancels a statement, keeping its connection.
  // Without an error listener, an idle client's error (a restart, a failover) would end the process.
  const config = { max, connectionTimeoutMillis: connectTimeoutMs, keepAlive: true, application_name: 'plant-store' }
  const open = (host: Host): pg.Pool => new pg.Pool({ ...config, connectionString: host.url }).on('error', noop)
  let current = singleHost ? open(hosts[0] as Host) : undefined
  let selecting: Promise<pg.Pool> | undefined
  let ended = false
  const ending = new Set<Promise<void>>()
  const check = attrs === 'read-write'
    ? 'SELECT NOT current_setting(\'transaction_read_only\')::bool AS ok'
    : 'SELECT NOT pg_is_in_recovery() AS ok'

  async function select (): Promise<pg.Pool> {
    const reasons: string[] = []
    for (const host of hosts) {
      const pool = open(host)
      try {
        if (attrs === 'any' || (await pool.query<{ ok: boolean }>(check)).rows[0]?.ok === true) {
          if (!ended) {
            selected(host.label)
            return (current = pool)
          }
        } else reasons.push(`${host.label} is ${attrs === 'read-write' ? 'read-only' : 'a standby'}`)
      } catch (error) {
        const cause = summarizeCause(error)
        reasons.push(`${host.label}: ${cause?.code === undefined ? '' : `${cause.code} `}${cause?.message ?? 'failed'}`)
      }
      endInBackground(pool)
      if (ended) break
    }
    throw new Error(`no host takes writes (target_session_attrs=${attrs}): ${reasons.join('; ') || 'closed'}`)
  }

  function endInBackground (pool: pg.Pool): void {
    // Not awaited: its statements in flight finish first, and a black-holed host never holds anything up.
    const done = pool.end().catch(noop).finally(() => ending.delete(done))
    ending.add(done)
  }

  return {
    current: () => current,
    get: (): Promise<pg.Pool> => current === undefined
      ? (selecting ??= select().finally(() => { selecting = undefined }))
      : Promise.resolve(current),
    /** The pool's host may be gone or read-only: the next statement selects a host again. */
    leave (pool: pg.Pool): void {
      if (singleHost || pool !== current) return
      current = undefined
      endInBackground(pool)
    },
    async end () {
      ended = true
      await selecting?.catch(noop)
      await Promise.all([current?.end(), ...ending])
    }
  }
}

/**
 * Connections whose statement was given up on: each stays out of the pool, re-cancelled every second, until the
 * server answers, QUARANTINE_MS pass or the store closes, so there are never more backends than the pool.
 */
function createQuarantine () {
  const closers = new Map<Promise<void>, () => void>()
  return {
    add (client: pg.PoolClient, work: Promise<unknown>): void {
      let open = true
      // Released with an error, the client is closed by the pool, and a statement still pending fails.
      const close = (): void => {
        if (open) client.release(true)
        open = false
      }
      const recancel = setInterval(() => { void cancel(client, QUARANTINE_MS) }, 1000)
      void awaitAtMost(work, QUARANTINE_MS).then(close)
      const done = work.then(() => {
        clearInterval(recancel)
        client.removeListener('error', noop)
        closers.delete(done)
      })
      closers.set(done, close)
    },
    async closeAll () {
      for (const close of closers.values()) close()
      await Promise.all(closers.keys())
    }
  }
}

/**
 * The store's statements on the host that takes writes, each answered within CANCEL_ANSWER_MS of its timeout
 * however the server stalls: a statement still running then gets the protocol's cancel (see createQuarantine).
 */
export function createSession (url: string, max: number, connectTimeoutMs: number, selected: (label: string) => void) {
  const hosts = createHostPool(url, max, connectTimeoutMs, selected)
  const quarantine = createQuarantine()
  // Named statements are parsed once per connection, until a pooler shows that it does not keep them.
  let prepared = true

  /** A connection by the statement's timeout, else StoreUnavailableError (nothing sent), also when queued too long. */
  async function acquire (timeoutAt: number): Promise<{ pool: pg.Pool, client: pg.PoolClient }> {
    const budget = timeoutAt - performance.now()
    const connecting = (async () => {
      if (budget <= 0) throw new Error('timed out queued behind statements the database has not answered')
      const pool = await hosts.get()
      return { pool, client: await pool.connect().catch((error: unknown) => { hosts.leave(pool); throw error }) }
    })()
    try {
      const connected = await awaitAtMost(connecting, budget)
      if (connected !== undefined) return connected
      throw new Error(`timed out after ${Math.round(budget)} ms waiting for a connection to the database`)
    } catch (error) {
      // A connection that comes too late goes back unused.
      connecting.then(({ client }) => { client.release() }, noop)
      const failure = new StoreUnavailableError({ cause: error })
      neverSent.add(failure)
      throw failure
    }
  }

  /**
   * `statement` as one message: one implicit transaction, one round trip through any pooler. After a cancel, a
   * success is no acknowledgement: a commit whose wait for the standby was cancelled is kept on the primary alone.
   */
  async function query<Row extends pg.QueryResultRow> (statement: string | pg.QueryConfig, timeoutAt: number):
  Promise<pg.QueryResult<Row>> {
    const { pool, client } = await acquire(timeoutAt)
    // A checked-out client reports a lost connection as an event too; the query's rejection carries it.
    client.on('error', noop)
    const sent = typeof statement === 'string' || prepared ? statement : { ...statement, name: undefined }
    const work = client.query<Row>(sent).then((result) => ({ result }), (error: unknown) => ({ error }))
    let answer = await awaitAtMost(work, timeoutAt - performance.now())
    const cancelled = answer === undefined ? cancel(client, QUARANTINE_MS) : undefined
    answer ??= await awaitAtMost(work, timeoutAt + CANCEL_ANSWER_MS - performance.now())
    if (answer === undefined) {
      quarantine.add(client, work)
      hosts.leave(pool)
      throw new StoreOutcomeUnknownError({
        cause: new Error('timed out: the database answered neither the statement nor its cancel by the deadline')
      })
    }
    client.removeListener('error', noop)
    const failure = 'error' in answer ? answer.error : undefined
    const code = failure instanceof pg.DatabaseError ? failure.code : undefined
    // Back to the pool after a clean refusal; closed after anything else or a read-only server (25006).
    const drop = 'error' in answer && (!serverRefused(failure) || code === '25006')
    void Promise.resolve(cancelled).then(() => {
      client.release(drop)
      if (drop) hosts.leave(pool)
    })
    if ('result' in answer && cancelled === undefined) return answer.result
    // A pooler in transaction mode (PgBouncer before 1.21) hands a named statement to a server that has not
    // parsed it, or has already: refused before it ran, it runs again unnamed, as does every later one.
    if (typeof sent !== 'string' && sent.name !== undefined && (code === '26000' || code === '42P05')) {
      prepared = false
      return await query(statement, timeoutAt)
    }
    const refused = nothingStored(failure)
    const StoreError = !refused ? StoreOutcomeUnknownError : code === '53100' ? StoreFullError : StoreUnavailableError
    throw new StoreError({ cause: failure ?? new Error('answered after a cancel') })
  }

  return {
    query,
    stats: () => {
      const pool = hosts.current()
      return {
        poolConnections: pool?.totalCount ?? 0,
        poolIdleConnections: pool?.idleCount ?? 0,
        poolWaitingRequests: pool?.waitingCount ?? 0
      }
    },
    end: async () => { await Promise.all([quarantine.closeAll(), hosts.end()]) }
  }
}

/** `work`'s outcome, or undefined once `ms` have passed before it (never, for Infinity). */
export function awaitAtMost<T> (work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<undefined>((resolve) => {
    if (ms !== Infinity) timer = setTimeout(resolve, Math.max(0, ms), undefined)
  })
  return Promise.race([work, late]).finally(() => { clearTimeout(timer) })
}

export function noop (): void {}
