// PostgreSQL for the bench: a fresh database per server, pgbench's ceiling for the same insert, and a
// bulk fill. Only the server of BENCH_DATABASE_URL is used; the bench creates and drops its own databases.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { has, run } from './util.js'

export const pgUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

export async function pgClient (url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  client.on('error', () => {})
  await client.connect()
  return client
}

const redact = (url) => { try { const u = new URL(url); if (u.password) u.password = '***'; return u.toString() } catch { return url } }

let available
/** Why PostgreSQL cannot be measured (not reachable), or undefined when it answers; asked once per run. */
export async function postgresProblem () {
  if (available === undefined) {
    try {
      const c = await pgClient(pgUrl)
      await c.end()
      available = { ok: true }
    } catch (error) {
      available = { problem: `PostgreSQL at ${redact(pgUrl)} is not reachable (${error.message}); set BENCH_DATABASE_URL` }
    }
  }
  return available.problem
}

/** A fresh database on the server of BENCH_DATABASE_URL: { url, drop() }. */
export async function freshDatabase (label) {
  const name = `plant_bench_${process.pid}_${label}`.toLowerCase().replace(/[^a-z0-9_]/g, '_')
  const admin = await pgClient(pgUrl)
  try { await admin.query(`CREATE DATABASE ${name}`) } finally { await admin.end() }
  const url = new URL(pgUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      const c = await pgClient(pgUrl)
      try { await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) } finally { await c.end() }
    }
  }
}

/**
 * pgbench's single-row insert (`INSERT … ON CONFLICT DO NOTHING`, random int64 id, a name and a tag
 * as the bench's bodies have) into a scratch table of a fresh database, at `clients` connections:
 * the ceiling for the PostgreSQL store. Resolves { rps, p50, p99 (ms), errors }.
 */
export async function pgbench ({ clients, warmup, seconds, dir, pinned }) {
  if (!has('pgbench', ['--version'])) throw new Error('pgbench is not installed (Debian package postgresql-client)')
  const db = await freshDatabase('pgbench')
  try {
    const c = await pgClient(db.url)
    await c.query('CREATE TABLE plant_bench (id bigint PRIMARY KEY, name text NOT NULL, tag text)')
    await c.end()
    const script = join(dir, 'pgbench-insert.sql')
    writeFileSync(script, "\\set id random(1, 9000000000000000000)\nINSERT INTO plant_bench (id, name, tag) VALUES (:id, 'bench plant', 'bench tag') ON CONFLICT DO NOTHING;\n")
    const once = (s) => {
      const [command, ...rest] = pinned('1', ['pgbench', '-n', '-c', String(clients), '-j', '1', '-f', script, '-T', String(s), db.url])
      return run(command, rest, { timeoutMs: (s + 30) * 1000, cwd: dir })
    }
    if (warmup > 0) await once(warmup)
    const { status, stdout, stderr } = await once(seconds)
    const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)
    if (status !== 0 || tps === null) throw new Error(`pgbench failed: ${(stderr || stdout).trim().split('\n').slice(-2).join(' | ')}`)
    const latency = Number(/latency average = ([\d.]+) ms/.exec(stdout)?.[1])
    const failed = Number(/number of failed transactions: (\d+)/.exec(stdout)?.[1] ?? 0)
    // pgbench reports the average only; its p99 would need a per-transaction log.
    return { rps: Number(tps[1]), p50: null, p99: null, latencyAvg: latency, errors: failed }
  } finally {
    await db.drop().catch(() => {})
  }
}

/**
 * Adds `plants` rows with random ids below 2^53 to the service's plant table at `url` (created by the
 * service's own start-up), a million per statement, the index kept up to date row by row.
 */
export async function prefillPostgres (url, plants) {
  const client = await pgClient(url)
  try {
    for (let done = 0; done < plants; done += 1_000_000) {
      const n = Math.min(1_000_000, plants - done)
      await client.query(`INSERT INTO plants (id, name, tag)
        SELECT 1 + floor(random() * (2^53 - 2))::int8, 'bench plant', NULL FROM generate_series(1, $1::int)
        ON CONFLICT (id) DO NOTHING`, [n])
    }
    const { rows } = await client.query('SELECT count(*)::int8::text AS count FROM plants')
    return Number(rows[0].count)
  } finally {
    await client.end()
  }
}
