// PostgreSQL for the bench: a fresh database per round, for the postgres target and pgbench alike.
export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test'
export const pgUrl = process.env.BENCH_DATABASE_URL ?? DEFAULT_PG_URL

let pgModule
export async function pgClient (url) {
  pgModule ??= (await import('pg')).default
  const client = new pgModule.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  client.on('error', () => {})
  await client.connect()
  return client
}

/** A fresh database on the server of BENCH_DATABASE_URL; falls back to that database itself. */
export async function freshDatabase (label) {
  const name = `plant_bench_${process.pid}_${label}`.replace(/[^a-z0-9_]/g, '_')
  const admin = await pgClient(pgUrl)
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } catch (error) {
    await admin.end()
    return { url: pgUrl, note: `cannot create a database (${error.message}); used ${new URL(pgUrl).pathname.slice(1)} as it is`, drop: async () => {} }
  }
  await admin.end()
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

let pgAvailable
/** { ok: true } once PostgreSQL at BENCH_DATABASE_URL answers, else { ok: false, note } (asked once per run). */
export async function postgresAvailable () {
  if (pgAvailable === undefined) {
    try {
      const c = await pgClient(pgUrl)
      await c.query('SELECT 1')
      await c.end()
      pgAvailable = { ok: true }
    } catch (error) {
      pgAvailable = { ok: false, note: `PostgreSQL at ${redact(pgUrl)} is not reachable (${error.message}); set BENCH_DATABASE_URL` }
    }
  }
  return pgAvailable
}
export const redact = (url) => { try { const u = new URL(url); if (u.password) u.password = '***'; return u.toString() } catch { return url } }
