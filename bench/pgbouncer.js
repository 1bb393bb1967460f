// PgBouncer for the postgres-pooled target: started by the bench itself, in transaction mode, with
// Debian's defaults otherwise (no ignore_startup_parameters, no max_prepared_statements), in front
// of the server of BENCH_DATABASE_URL. As root it runs as the postgres user (it refuses root).
import { execFileSync, spawn } from 'node:child_process'
import { accessSync, chownSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { pgClient } from './postgres.js'
import { freePort, sleep } from './util.js'

/** The pgbouncer binary: $PGBOUNCER, Debian's /usr/sbin/pgbouncer, or one on PATH. */
export function findPgBouncer () {
  const candidates = [process.env.PGBOUNCER, '/usr/sbin/pgbouncer', ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'pgbouncer'))]
  return candidates.find((file) => {
    if (!file) return false
    try { accessSync(file, constants.X_OK); return true } catch { return false }
  })
}

/** A PgBouncer (startPgBouncer) in front of the server of a database URL; resolves { url (the same database through it), stop }. */
export async function pgBouncerFor (databaseUrl) {
  const server = new URL(databaseUrl)
  const bouncer = await startPgBouncer({ host: server.hostname, port: Number(server.port || 5432) })
  const through = new URL(databaseUrl)
  through.host = `127.0.0.1:${bouncer.port}`
  return { url: through.toString(), stop: bouncer.stop }
}

/** Starts a pgbouncer that routes every database name to `upstream`; resolves { port, stop }. */
export async function startPgBouncer (upstream) {
  const binary = findPgBouncer()
  if (binary === undefined) throw new Error('pgbouncer is not installed (Debian package pgbouncer, or set PGBOUNCER)')
  const dir = mkdtempSync(join(tmpdir(), 'plant-bench-pgbouncer-'))
  const root = process.getuid?.() === 0
  const user = root
    ? { uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })) }
    : {}
  if (root) chownSync(dir, user.uid, user.gid)
  const port = await freePort()
  writeFileSync(join(dir, 'userlist.txt'), '"postgres" ""\n')
  writeFileSync(join(dir, 'pgbouncer.ini'), [
    '[databases]',
    `* = host=${upstream.host} port=${upstream.port}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    `unix_socket_dir = ${dir}`,
    `logfile = ${join(dir, 'pgbouncer.log')}`,
    'auth_type = trust',
    `auth_file = ${join(dir, 'userlist.txt')}`,
    'admin_users = postgres',
    'pool_mode = transaction',
    // Debian's default pool (20 server connections), above the service's 10 (DATABASE_POOL_MAX).
    'default_pool_size = 20',
    ''
  ].join('\n'))
  const child = spawn(binary, [join(dir, 'pgbouncer.ini')], { stdio: 'ignore', ...user })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  }
  for (let i = 0; ; i++) {
    try {
      const admin = await pgClient(`postgres://postgres@127.0.0.1:${port}/pgbouncer`)
      await admin.end()
      break
    } catch (error) {
      if (i > 100 || child.exitCode !== null) {
        await stop()
        throw new Error(`pgbouncer did not start: ${error.message}`, { cause: error })
      }
      await sleep(50)
    }
  }
  return { port, stop }
}
