import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { accessSync, chownSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import pg from 'pg'
import { freePort } from '../helpers.js'

/**
 * A real PgBouncer for the pooled suites, started by the tests themselves (so any machine with the
 * `pgbouncer` package runs them, not only CI). Debian's defaults except what a test needs: no
 * `ignore_startup_parameters`, no `max_prepared_statements`, so a driver that sends a startup
 * parameter or relies on a named prepared statement fails here as it would in production.
 */
export interface PgBouncer {
  port: number
  poolMode: 'transaction' | 'session'
  /**
   * Adds a database alias (the name clients connect to) that reaches `dbname` on `host:port`, logged
   * in as `user` (whoever the client is), then reloads the pooler.
   */
  addDatabase (alias: string, target: { host: string, port: number, dbname: string, user?: string }): Promise<void>
  /** The pooler's log, for a failure message. */
  log (): string
  stop (): Promise<void>
}

/** The pgbouncer binary: $PGBOUNCER, Debian's /usr/sbin/pgbouncer, or one on PATH. */
export function findPgBouncer (): string | undefined {
  const candidates = [process.env.PGBOUNCER, '/usr/sbin/pgbouncer', ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'pgbouncer'))]
  return candidates.find((file): file is string => {
    if (file === undefined || file === '') return false
    try {
      accessSync(file, constants.X_OK)
      return true
    } catch {
      return false
    }
  })
}

/** PgBouncer and initdb refuse to run as root: as root the tests start them as the `postgres` user. */
export function runAs (): { uid: number, gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
  }
}

export async function startPgBouncer (options: {
  binary: string,
  poolMode?: 'transaction' | 'session',
  upstream: {
    host: string,
    port: number
  }
}): Promise<PgBouncer> {
  const poolMode = options.poolMode ?? 'transaction'
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-pgbouncer-'))
  const user = runAs()
  if (user !== undefined) chownSync(dir, user.uid, user.gid)
  const port = await freePort()
  const databases = new Map<string, string>()
  const ini = join(dir, 'pgbouncer.ini')
  const logFile = join(dir, 'pgbouncer.log')
  const write = (): void => {
    const lines = [
      '[databases]',
      ...[...databases].map(([alias, target]) => `${alias} = ${target}`),
      // Any other database name goes to the server as is.
      `* = host=${options.upstream.host} port=${options.upstream.port}`,
      '',
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      `logfile = ${logFile}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'admin_users = postgres',
      `pool_mode = ${poolMode}`,
      // Transaction mode: fewer server connections than the clients' pools hold, so transactions of
      // different clients share server connections, as in production, and session state would show.
      // Session mode holds a server connection per client connection: Debian's default 20.
      `default_pool_size = ${poolMode === 'transaction' ? 5 : 20}`,
      // Debian's default is 15 s between attempts after a failed server login; the outage tests
      // bring the server back and should not wait that long.
      'server_login_retry = 1',
      ''
    ]
    writeFileSync(ini, lines.join('\n'))
  }
  writeFileSync(join(dir, 'userlist.txt'), '"postgres" ""\n')
  write()

  const child: ChildProcess = spawn(options.binary, [ini], { stdio: 'ignore', ...(user ?? {}) })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const log = (): string => {
    try {
      return readFileSync(logFile, 'utf8')
    } catch {
      return ''
    }
  }

  /** A statement on the admin console (RELOAD, SHOW …): it answers once done. */
  async function admin (statement: string): Promise<void> {
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'pgbouncer' })
    client.on('error', () => {})
    try {
      await client.connect()
      await client.query(statement)
    } finally {
      await client.end().catch(() => {})
    }
  }

  const deadline = Date.now() + 10000
  for (;;) {
    try {
      await admin('SHOW VERSION')
      break
    } catch (error) {
      if (child.exitCode !== null || Date.now() > deadline) {
        child.kill('SIGKILL')
        throw new Error(`pgbouncer did not start: ${String(error)}\n${log()}`, { cause: error })
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  return {
    port,
    poolMode,
    async addDatabase (alias, target) {
      databases.set(alias, `host=${target.host} port=${target.port} dbname=${target.dbname}${target.user === undefined ? '' : ` user=${target.user}`}`)
      write()
      await admin('RELOAD')
    },
    log,
    async stop () {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000)
        await exited
        clearTimeout(timer)
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
