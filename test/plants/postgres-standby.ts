import { execFile } from 'node:child_process'
import { accessSync, appendFileSync, chownSync, constants, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { docBlock } from '../docs/blocks.js'
import { runAs } from './pgbouncer.js'
import { freePort } from '../helpers.js'

const run = promisify(execFile)

/**
 * A primary and its synchronous standby, built by the tests themselves in a temporary folder
 * (initdb, pg_basebackup -R), on spare ports, as the `postgres` user (initdb refuses root), the
 * topology docs/storage.md's "High availability" describes: a commit is acknowledged once the standby has
 * it, so a promotion loses no acknowledged plant.
 */
export interface StandbyPair {
  primary: Node
  standby: Node
  /** The servers' logs, for a failure message. */
  logs (): string
  /** Stops both servers (immediately) and removes the folder. */
  destroy (): Promise<void>
}

export interface Node {
  port: number
  /** A connection string to this server's `postgres` database, as the service's user. */
  url: string
  /** `pg_ctl stop` with this mode: `immediate` is a crash (no checkpoint, connections cut). */
  stop (mode: 'immediate' | 'fast'): Promise<void>
  start (): Promise<void>
  /** `pg_ctl promote -w`: resolves once the standby takes writes. */
  promote (): Promise<void>
  /** Runs one query on this server with a connection of its own. */
  query<Row extends pg.QueryResultRow = pg.QueryResultRow> (text: string, values?: unknown[]): Promise<pg.QueryResult<Row>>
}

/** The folder of initdb, pg_ctl and pg_basebackup: $PG_BIN, or the newest of Debian's /usr/lib/postgresql/<version>/bin. */
export function findPostgresBinaries (): string | undefined {
  const candidates = [process.env.PG_BIN]
  try {
    candidates.push(...readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a)).map((version) => `/usr/lib/postgresql/${version}/bin`))
  } catch {
    // No Debian PostgreSQL packages: only $PG_BIN can name the binaries.
  }
  return candidates.find((dir): dir is string => {
    if (dir === undefined || dir === '') return false
    try {
      for (const tool of ['initdb', 'pg_ctl', 'pg_basebackup']) accessSync(join(dir, tool), constants.X_OK)
      return true
    } catch {
      return false
    }
  })
}

export async function startStandbyPair (bin: string): Promise<StandbyPair> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-standby-'))
  const user = runAs()
  if (user !== undefined) chownSync(dir, user.uid, user.gid)
  const tool = async (name: string, args: string[]): Promise<void> => {
    await run(join(bin, name), args, { ...(user ?? {}), env: { PATH: process.env.PATH, LC_ALL: 'C' }, timeout: 60000 })
  }
  const [primaryPort, standbyPort] = [await freePort(), await freePort()]
  const primaryDir = join(dir, 'primary')
  const standbyDir = join(dir, 'standby')
  const logOf = (name: string): string => join(dir, `${name}.log`)
  // No fsync: the servers are killed, never the machine, so the page cache keeps what a kill would.
  const common = [
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${dir}'`,
    'fsync = off',
    'shared_buffers = 16MB',
    'max_connections = 100',
    'max_wal_senders = 4',
    'wal_level = replica',
    'hot_standby = on',
    'wal_receiver_status_interval = 1s'
  ]

  await tool('initdb', ['-D', primaryDir, '-U', 'postgres', '-A', 'trust', '-N', '--no-instructions'])
  // The primary's synchronous settings as docs/storage.md gives them.
  appendFileSync(primaryDir + '/postgresql.conf', [...common, `port = ${primaryPort}`, docBlock('docs/storage.md', 'postgresql-synchronous')].join('\n'))
  const nodeOf = (port: number, dataDir: string, name: string): Node => {
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`
    return {
      port,
      url,
      stop: (mode) => tool('pg_ctl', ['stop', '-D', dataDir, '-m', mode, '-w']),
      start: () => tool('pg_ctl', ['start', '-D', dataDir, '-l', logOf(name), '-w']),
      promote: () => tool('pg_ctl', ['promote', '-D', dataDir, '-w']),
      async query (text, values) {
        const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
        client.on('error', () => {})
        await client.connect()
        try {
          return await client.query(text, values)
        } finally {
          await client.end().catch(() => {})
        }
      }
    }
  }
  const primary = nodeOf(primaryPort, primaryDir, 'primary')
  const standby = nodeOf(standbyPort, standbyDir, 'standby')
  const logs = (): string => ['primary', 'standby'].map((name) => {
    try {
      return `--- ${name}\n${readFileSync(logOf(name), 'utf8')}`
    } catch {
      return ''
    }
  }).join('\n')
  const destroy = async (): Promise<void> => {
    for (const dataDir of [primaryDir, standbyDir]) await tool('pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-w']).catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  }

  try {
    await primary.start()
    await tool('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', standbyDir, '-R', '-X', 'stream', '-c', 'fast'])
    // The standby names itself s1 (application_name), the primary's synchronous standby. Promoted, it
    // has no standby of its own: it must not wait for one (an HA manager would set this). In
    // postgresql.auto.conf, read last, where pg_basebackup -R wrote its primary_conninfo.
    appendFileSync(standbyDir + '/postgresql.auto.conf', [
      `port = ${standbyPort}`,
      "synchronous_standby_names = ''",
      `primary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres application_name=s1'`,
      ''
    ].join('\n'))
    await standby.start()
    const deadline = Date.now() + 15000
    for (;;) {
      const { rows } = await primary.query<{ sync_state: string }>("SELECT sync_state FROM pg_stat_replication WHERE application_name = 's1'")
      if (rows[0]?.sync_state === 'sync') break
      if (Date.now() > deadline) throw new Error(`the standby did not become synchronous:\n${logs()}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  } catch (error) {
    await destroy()
    throw error
  }
  return { primary, standby, logs, destroy }
}
