import pg from 'pg'
import { StoreFullError, StoreOutcomeUnknownError, StoreUnavailableError } from '../errors.js'
import { ConfigError } from '../config/config-error.js'
import { summarizeCause } from '../observability/failure-log.js'
import { cancel } from './postgres-cancel.js'

/** A statement still running at its timeout is cancelled and answered within this (the rest of a second: the reply). */
const CANCEL_ANSWER_MS = 600
/** After that, a connection waits in quarantine this long for the answer (cancelled again meanwhile), then closes. */
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

export const unavailable = (reason: string): Error => new StoreUnavailableError({ cause: new Error(reason) })

/**
 * Reads DATABASE_URL as libpq does, with one host or several (`postgres://u@h1:5432,h2/db`), into one URL
 * per host. Errors name DATABASE_URL and a host's position, never a part of the URL (it may hold a password).
 */
export function parsePostgresUrl (url: string) {
  // Its callers have checked the scheme, and this matches every URL that has it.
  const [, scheme = '', userinfo = '', hostList = '', path = ''] =
    /^(postgres(?:ql)?:\/\/)([^/?#]*@)?([^/?#]*)(.*)$/s.exec(url) ?? []
  const params = new URLSearchParams(/\?([^#]*)/.exec(path)?.[1])
  const attrs = params.get('target_session_attrs') ?? 'any'
  if (!/^(?:any|read-write|primary)$/.test(attrs)) {
    throw new ConfigError('DATABASE_URL: target_session_attrs must be read-write, primary or any (the service writes)')
  }
  // pg reads every sslmode as verify-full unless told to read it as libpq (and psql) does.
  const libpq = params.has('sslmode') && !params.has('uselibpqcompat')
  const rest = libpq ? path.replace(/(\?[^#]*)/, '$1&uselibpqcompat=true') : path
  const names = hostList.split(',')
  const hosts = names.map((name, index) => {
    const hostUrl = `${scheme}${userinfo}${name}${rest}`
    // pg parses it with URL, and reads `user@/db` (no host: a Unix socket from ?host= or PGHOST) the same way; an
    // empty host is pg's to resolve with one host only.
    if ((name === '' && names.length > 1) || !URL.canParse(hostUrl.replace('@/', '@x/'))) {
      const where = names.length === 1 ? 'the host' : `host ${index + 1} of ${names.length}`
      throw new ConfigError(`DATABASE_URL: not a valid URL at ${where} (percent-encode / ? # @ % in a password)`)
    }
    return { label: name === '' ? 'default host' : /:\d+$/.test(name) ? name : `${name}:5432`, url: hostUrl }
  })
  return { hosts, attrs }
}

/**
 * A pool per host, the first in the URL's order that answers and suits target_session_attrs chosen (again after
 * leave()); one host that any server will do for is never checked. A pool left keeps its statements in flight.
 */
function createHostPool (
  url: string, config: pg.PoolConfig & { connectionTimeoutMillis: number }, chosen: (label: string) => void
) {
  const { hosts, attrs } = parsePostgresUrl(url)
  // Without error listeners, a client's error (a restart, a failover) would end the process; a statement's own
  // failure comes as its rejection.
  const open = (connectionString: string): pg.Pool => new pg.Pool({ ...config, connectionString }).on('error', noop)
    .on('connect', (client) => client.on('error', noop))
  const pools = hosts.map(({ label, url }) => ({ label, pool: open(url) }))
  const check = attrs === 'read-write'
    ? 'SELECT NOT current_setting(\'transaction_read_only\')::bool AS ok'
    : attrs === 'primary' ? 'SELECT NOT pg_is_in_recovery() AS ok' : 'SELECT true AS ok'
  const onlyChoice = hosts.length === 1 && attrs === 'any'
  let current = onlyChoice ? pools[0]?.pool : undefined
  let choosing: Promise<pg.Pool> | undefined

  async function choose (): Promise<pg.Pool> {
    const reasons: string[] = []
    for (const { label, pool } of pools) {
      try {
        // Bounded as a connect is: a host that stalls once connected is passed over, its connection closed.
        const client = await pool.connect()
        const answer = await awaitAtMost(client.query<{ ok: boolean }>(check), config.connectionTimeoutMillis)
          .catch((error: unknown) => { client.release(true); throw error })
        client.release(answer === undefined)
        if (answer === undefined) throw new Error('no answer to the host check in time')
        if (answer.rows[0]?.ok !== true) reasons.push(`${label} is ${attrs === 'primary' ? 'a standby' : 'read-only'}`)
        else {
          chosen(label)
          return (current = pool)
        }
      } catch (error) {
        const cause = summarizeCause(error)
        reasons.push(`${label}: ${cause?.code === undefined ? '' : `${cause.code} `}${cause?.message ?? 'failed'}`)
      }
    }
    throw new Error(`no host takes writes (target_session_attrs=${attrs}): ${reasons.join('; ')}`)
  }

  /** The pool's host may be gone or read-only: the next statement chooses a host again. */
  const leave = (pool: pg.Pool): void => { if (!onlyChoice && pool === current) current = undefined }

  return {
    current: () => current,
    leave,
    async connect (): Promise<{ pool: pg.Pool, client: pg.PoolClient }> {
      const pool = current ?? await (choosing ??= choose().finally(() => { choosing = undefined }))
      return { pool, client: await pool.connect().catch((error: unknown) => { leave(pool); throw error }) }
    },
    /** Ended pools refuse a choice in progress at once. */
    end: () => Promise.all([choosing?.catch(noop), ...pools.map(({ pool }) => pool.end())])
  }
}

/**
 * The store's statements on the host that takes writes, each answered within CANCEL_ANSWER_MS of its timeout
 * however the server stalls: a statement still running then gets the protocol's cancel. A connection whose
 * statement was given up on stays out of the pool, cancelled again a second after each cancel, until the server
 * answers, QUARANTINE_MS pass or the store closes, so there are never more backends than the pool.
 */
export function createSession (url: string, max: number, connectTimeoutMs: number, chosen: (label: string) => void) {
  // What every pooler passes: no startup parameter but application_name, no session state.
  const config = { max, connectionTimeoutMillis: connectTimeoutMs, keepAlive: true, application_name: 'plant-store' }
  const hosts = createHostPool(url, config, chosen)
  const quarantined = new Set<pg.PoolClient>()
  // Named statements are parsed once per connection, until a pooler shows that it does not keep them.
  let prepared = true
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
    const { pool, client } = connected
    const sent = prepared ? statement : { ...statement, name: undefined }
    const work = client.query<Row>(sent).then((result) => ({ result }), (error: unknown) => ({ error }))
    let answer = await awaitAtMost(work, timeoutAt - performance.now())
    const cancelled = answer === undefined
    const cancelling = cancelled ? cancel(client, QUARANTINE_MS) : undefined
    answer ??= await awaitAtMost(work, timeoutAt + CANCEL_ANSWER_MS - performance.now())
    if (answer === undefined) {
      quarantined.add(client)
      // Never two cancels at once: a frozen server is not left a queue of them to work through when it wakes.
      void (async () => {
        await cancelling
        while (await awaitAtMost(work, 1000) === undefined) await cancel(client, QUARANTINE_MS)
      })()
      void awaitAtMost(work, QUARANTINE_MS).then(() => { release(client) })
      hosts.leave(pool)
      throw new StoreOutcomeUnknownError({ cause: new Error('no answer to the statement or its cancel in time') })
    }
    const failure = 'error' in answer ? answer.error : undefined
    const code = failure instanceof pg.DatabaseError ? failure.code : undefined
    // Back to the pool after a clean refusal; closed after anything else, a read-only server (25006) or a cancel (sent
    // on a connection of its own, it could reach this one's next statement).
    const drop = failure !== undefined && (!serverRefused(failure) || code === '25006')
    client.release(drop || cancelled)
    if (drop) hosts.leave(pool)
    if ('result' in answer && !cancelled) return answer.result
    // A pooler in transaction mode (PgBouncer before 1.21) hands a named statement to a server that has not
    // parsed it, or has already: refused before it ran, it runs again unnamed, as does every later one.
    if (sent.name !== undefined && (code === '26000' || code === '42P05')) {
      prepared = false
      return await query(statement, timeoutAt)
    }
    const refused = nothingStored(failure)
    const StoreError = !refused ? StoreOutcomeUnknownError : code === '53100' ? StoreFullError : StoreUnavailableError
    throw new StoreError({ cause: failure ?? new Error('answered after a cancel') })
  }

  return {
    query,
    stats: () => ({
      poolConnections: hosts.current()?.totalCount ?? 0,
      poolIdleConnections: hosts.current()?.idleCount ?? 0,
      poolWaitingRequests: hosts.current()?.waitingCount ?? 0
    }),
    async end () {
      for (const client of quarantined) release(client)
      await hosts.end()
    }
  }
}

/** `work`'s outcome, or undefined once `ms` have passed before it. */
export function awaitAtMost<T> (work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<undefined>((resolve) => { timer = setTimeout(resolve, Math.max(0, ms), undefined) })
  return Promise.race([work, late]).finally(() => { clearTimeout(timer) })
}

export function noop (): void {}
