import pg from 'pg'
import { ConfigError } from '../config/config-error.js'
import { summarizeCause, type FailureLogger } from '../observability/failure-log.js'

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

/** One host of DATABASE_URL and its pool. */
export interface Host { label: string, pool: pg.Pool }

/**
 * A pool per host, and the host statements go to: the first in the URL's order that answers and suits
 * target_session_attrs, chosen again after chooseAgain(). One host that any server will do for is never checked.
 * Every host is checked at once, so that a choice takes one connect timeout however many hosts are down.
 */
export function createHosts (url: string, options: pg.PoolConfig & { connectionTimeoutMillis: number },
  log: FailureLogger) {
  const { hosts: urls, attrs } = parsePostgresUrl(url)
  // Without a listener, a connection's error (a restart, a failover) would end the process; a statement's own failure
  // comes as its rejection. Each kind is logged once: a failover repeats them on every connection.
  const kindsLogged = new Set<string>()
  const logError = (error: Error): void => {
    const cause = summarizeCause(error)
    const kind = cause?.code ?? cause?.message ?? ''
    if (kindsLogged.has(kind)) return
    kindsLogged.add(kind)
    log.warn({ subject: 'store', cause }, 'store connection error (each kind is logged once)')
  }
  const hosts: Host[] = urls.map(({ label, url }) => ({
    label,
    // What every pooler passes: no startup parameter but application_name, no session state.
    pool: new pg.Pool({ ...options, keepAlive: true, application_name: 'plant-store', connectionString: url })
      .on('error', logError).on('connect', (client) => client.on('error', logError))
  }))
  const check = attrs === 'read-write'
    ? 'SELECT NOT current_setting(\'transaction_read_only\')::bool AS ok'
    : attrs === 'primary' ? 'SELECT NOT pg_is_in_recovery() AS ok' : 'SELECT true AS ok'
  const unchecked = hosts.length === 1 && attrs === 'any'
  let inUse = unchecked ? hosts[0] : undefined
  let choice: Promise<Host> | undefined

  /** Why `host` cannot take the writes, or undefined when it can; within the connect timeout. */
  async function refusal ({ label, pool }: Host): Promise<string | undefined> {
    const deadline = performance.now() + options.connectionTimeoutMillis
    try {
      const client = await pool.connect()
      // A host that stalls once connected is passed over, its connection closed.
      const answer = await awaitAtMost(client.query<{ ok: boolean }>(check), deadline - performance.now())
        .catch((error: unknown) => { client.release(true); throw error })
      client.release(answer === undefined)
      if (answer === undefined) return `${label}: no answer to the host check in time`
      return answer.rows[0]?.ok === true ? undefined : `${label} is ${attrs === 'primary' ? 'a standby' : 'read-only'}`
    } catch (error) {
      const cause = summarizeCause(error)
      return `${label}: ${cause?.code === undefined ? '' : `${cause.code} `}${cause?.message ?? 'failed'}`
    }
  }

  async function choose (): Promise<Host> {
    const refusals = hosts.map(refusal)
    for (const [index, host] of hosts.entries()) {
      if (await refusals[index] !== undefined) continue
      log.info({ subject: 'store', host: host.label }, 'store host selected')
      return (inUse = host)
    }
    const reasons = await Promise.all(refusals)
    throw new Error(`no host takes writes (target_session_attrs=${attrs}): ${reasons.join('; ')}`)
  }

  /** The host may be gone or read-only: the next statement chooses a host again. */
  const chooseAgain = (host: Host): void => { if (!unchecked && host === inUse) inUse = undefined }

  return {
    inUse: () => inUse,
    chooseAgain,
    async connect (): Promise<{ host: Host, client: pg.PoolClient }> {
      const host = inUse ?? await (choice ??= choose().finally(() => { choice = undefined }))
      return { host, client: await host.pool.connect().catch((error: unknown) => { chooseAgain(host); throw error }) }
    },
    /** Ended pools refuse a choice in progress at once. */
    end: () => Promise.all([choice?.catch(noop), ...hosts.map(({ pool }) => pool.end())])
  }
}

/** `work`'s outcome, or undefined once `ms` have passed before it. */
export function awaitAtMost<T> (work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<undefined>((resolve) => { timer = setTimeout(resolve, Math.max(0, ms), undefined) })
  return Promise.race([work, late]).finally(() => { clearTimeout(timer) })
}

export function noop (): void {}
