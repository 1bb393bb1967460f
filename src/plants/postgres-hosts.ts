import pg from 'pg'
import { ConfigError } from '../lib/config-error.js'
import { summarizeCause } from '../lib/failure-log.js'

/** libpq's target_session_attrs, the values that suit a service that writes. */
export type TargetSessionAttrs = 'any' | 'read-write' | 'primary'

export interface PostgresHost {
  /** `host:port` as written, for log lines and errors (never the user or the password). */
  label: string
  /** The same URL with this host alone: what pg parses (its own parameters: ssl, options, ...). */
  connectionString: string
}

export interface PostgresTarget {
  hosts: PostgresHost[]
  targetSessionAttrs: TargetSessionAttrs
}

// scheme, userinfo (up to the authority's last @, as URL parsers read it), the host list, the rest.
const URL_PARTS = /^(postgres(?:ql)?:\/\/)([^/?#]*@)?([^/?#]*)(.*)$/s
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/
const WRITABLE: readonly string[] = ['any', 'read-write', 'primary']
const READ_ONLY: readonly string[] = ['read-only', 'standby', 'prefer-standby']

/**
 * Reads a `postgres://` DATABASE_URL as libpq does: one host, or several separated by commas
 * (`postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write`). Throws ConfigError, one line
 * naming DATABASE_URL and a host's position, never a part of the URL: a mistyped URL can put a piece
 * of the password where a host should be.
 */
export function parsePostgresUrl (url: string): PostgresTarget {
  const parts = URL_PARTS.exec(url)
  if (parts === null) throw new ConfigError('DATABASE_URL: not a postgres:// URL')
  const [, scheme = '', userinfo = '', hostList = '', path = ''] = parts
  const query = /\?([^#]*)/.exec(path)?.[1] ?? ''
  const params = new URLSearchParams(query)
  const attrs = params.get('target_session_attrs') ?? 'any'
  // pg reads sslmode as verify-full unless told to read it as libpq (and psql) does.
  const rest = params.has('sslmode') && !params.has('uselibpqcompat') ? path.replace(/(\?[^#]*)/, '$1&uselibpqcompat=true') : path
  if (READ_ONLY.includes(attrs)) throw new ConfigError(`DATABASE_URL: target_session_attrs=${attrs} would send the service's writes to a read-only server; use read-write, primary or any`)
  if (!WRITABLE.includes(attrs)) throw new ConfigError('DATABASE_URL: target_session_attrs must be read-write, primary or any')
  const names = hostList.split(',')
  const hosts = names.map((name, index): PostgresHost => {
    const where = names.length === 1 ? 'the host' : `host ${index + 1} of ${names.length}`
    const hostPort = HOST_PORT.exec(name)
    // An empty host (a Unix socket from ?host=, or PGHOST) is pg's to resolve, with one host only.
    if ((hostPort === null && !(name === '' && names.length === 1)) || Number(hostPort?.[2] ?? 0) > 65535) {
      throw new ConfigError(`DATABASE_URL: ${where} is not host or host:port (a password holding / ? # @ , must be percent-encoded)`)
    }
    const connectionString = `${scheme}${userinfo}${name}${rest}`
    try {
      // pg parses it with URL, and reads `user@/db` (no host) the same way.
      void new URL(connectionString.replace('@/', '@___DUMMY___/'))
    } catch {
      throw new ConfigError(`DATABASE_URL: not a valid URL at ${where} (a password holding / ? # @ : % must be percent-encoded)`)
    }
    return { label: name === '' ? 'default host' : hostPort?.[2] === undefined ? `${name}:5432` : name, connectionString }
  })
  return { hosts, targetSessionAttrs: attrs as TargetSessionAttrs }
}

/** Pools of the host that takes the writes, picked again after a failure. */
export interface HostPools {
  /** A connection from the current host's pool, selecting the host first when there is none. */
  connect (): Promise<{ pool: pg.Pool, client: pg.PoolClient }>
  /**
   * `pool` failed in a way that may mean its host is gone or takes no more writes (refused, lost,
   * read-only): with several hosts or a target_session_attrs to check, the next connect() selects
   * again, trying the hosts in order. With one host and `any`, pg's pool reconnects by itself.
   */
  lost (pool: pg.Pool): void
  /** The current pool's counts (0 while none is selected). */
  stats (): { total: number, idle: number, waiting: number }
  end (): Promise<void>
}

/**
 * The small host-selection layer libpq has and pg has not: the hosts are tried in order, each with
 * the connect timeout, and the first one that accepts a connection (and, for read-write, answers
 * `transaction_read_only = off`; for primary, `pg_is_in_recovery() = false`) gets a pool. Its
 * connections then go straight there: the check costs one connection per selection, not one per
 * connection. With one host and `any` (the default) there is no selection at all: one pool, as pg has it.
 */
export function createHostPools (target: PostgresTarget, options: pg.PoolConfig, selected: (label: string) => void = () => {}): HostPools {
  const open = (host: PostgresHost): pg.Pool => {
    const pool = new pg.Pool({ ...options, connectionString: host.connectionString })
    // An idle client's error (server restart, failover, network cut) is emitted on the pool; without
    // a listener it would kill the process. The pool drops that client; the next query opens a new one.
    pool.on('error', ignore)
    return pool
  }
  const fixed = target.hosts.length === 1 && target.targetSessionAttrs === 'any'
  let current: pg.Pool | undefined = fixed ? open(target.hosts[0] as PostgresHost) : undefined
  let selecting: Promise<pg.Pool> | undefined
  let ended = false
  const retiring = new Set<Promise<void>>()

  async function acceptable (host: PostgresHost): Promise<string | undefined> {
    const client = new pg.Client({ ...options, connectionString: host.connectionString })
    client.on('error', ignore)
    try {
      await client.connect()
      if (target.targetSessionAttrs === 'read-write') {
        const { rows } = await client.query<{ transaction_read_only: string }>('SHOW transaction_read_only')
        if (rows[0]?.transaction_read_only !== 'off') return `${host.label} is read-only`
      } else if (target.targetSessionAttrs === 'primary') {
        const { rows } = await client.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby')
        if (rows[0]?.standby !== false) return `${host.label} is a standby`
      }
      return undefined
    } catch (error) {
      const cause = summarizeCause(error)
      return `${host.label}: ${cause?.code === undefined ? '' : `${cause.code} `}${cause?.message ?? 'failed'}`
    } finally {
      // Not awaited: closing the probe must never hold the selection up (a host that black-holes).
      client.end().catch(ignore)
    }
  }

  async function select (): Promise<pg.Pool> {
    const reasons: string[] = []
    for (const host of target.hosts) {
      const reason = await acceptable(host)
      if (reason === undefined) {
        if (ended) break
        current = open(host)
        selected(host.label)
        return current
      }
      reasons.push(reason)
    }
    throw new Error(`no host takes writes (target_session_attrs=${target.targetSessionAttrs}): ${reasons.join('; ') || 'closed'}`)
  }

  function pool (): pg.Pool | Promise<pg.Pool> {
    if (ended) throw new Error('the store is closed')
    if (current !== undefined) return current
    // One selection at a time: every batch that needs a host waits for the same one.
    selecting ??= select().finally(() => { selecting = undefined })
    return selecting
  }

  function lost (pool: pg.Pool): void {
    if (fixed || pool !== current) return
    current = undefined
    // Batches still running on it finish there; end() resolves once they are released.
    const retired = pool.end().catch(ignore)
    retiring.add(retired)
    void retired.finally(() => retiring.delete(retired))
  }

  return {
    async connect () {
      const chosen = await pool()
      try {
        return { pool: chosen, client: await chosen.connect() }
      } catch (error) {
        lost(chosen)
        throw error
      }
    },
    lost,
    stats: () => ({ total: current?.totalCount ?? 0, idle: current?.idleCount ?? 0, waiting: current?.waitingCount ?? 0 }),
    async end () {
      ended = true
      await selecting?.catch(ignore)
      const last = current
      current = undefined
      await Promise.all([last?.end(), ...retiring])
    }
  }
}

function ignore (): void {}
