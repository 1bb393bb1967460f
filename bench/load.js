// The load runners of `npm run bench`: wrk or autocannon against an HTTP target, pgbench, and the
// memory-per-plant measure, each with the parsing of its result.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pgBouncerFor } from './pgbouncer.js'
import { freshDatabase, pgClient, postgresAvailable } from './postgres.js'
import { BENCH, has, percentile, resultLine, run, TOKEN } from './util.js'

/**
 * The runners for one bench run. ctx: { tool ('wrk' | 'autocannon'), threads, loadCpus,
 * pinned(cpus, argv) → [command, argv], runTmp, options ({ warmup, duration, pgConnections }) }.
 */
export function createLoad (ctx) {
  const { tool, threads, loadCpus, pinned, runTmp, options } = ctx
  let loadRuns = 0

  /** Puts the standard load on 127.0.0.1:port for `seconds`; returns req/s, latency (ms) and errors. */
  async function load (port, connections, seconds) {
    loadRuns += 1
    // Unique ids across every load run of this process: see bench/unique-ids.lua.
    const env = { ...process.env, BENCH_TOKEN: TOKEN, BENCH_ID_BASE: String(2 ** 32 * loadRuns) }
    const url = `http://127.0.0.1:${port}/plants`
    const argv = tool === 'wrk'
      ? ['wrk', `-t${Math.min(threads, connections)}`, `-c${connections}`, `-d${seconds}s`, '--timeout', '5s', '-s', join(BENCH, 'unique-ids.lua'), url]
      : [process.execPath, join(BENCH, 'autocannon-load.js'), url, String(connections), String(seconds)]
    const [command, rest] = pinned(loadCpus, argv)
    const { status, stdout, stderr } = await run(command, rest, { env, timeoutMs: (seconds + 30) * 1000 })
    const r = resultLine(stdout)
    if (r === null) throw new Error(`${tool} failed (status ${status}): ${stderr.trim().split('\n').slice(-3).join(' | ')}`)
    const seconds_ = r.durationUs / 1e6
    return {
      rps: r.requests / seconds_,
      requests: r.requests,
      p50: r.p50Us / 1000,
      p99: r.p99Us / 1000,
      max: r.maxUs / 1000,
      non2xx: r.non2xx,
      socketErrors: r.connectErrors + r.readErrors + r.writeErrors + r.timeouts
    }
  }

  /**
   * pgbench's single-row insert, at the postgres target's concurrency: the ceiling for that store.
   * pooled: through a PgBouncer in transaction mode started for it, as postgres-pooled is.
   */
  async function measurePgbench (round, { pooled = false } = {}) {
    const available = await postgresAvailable()
    if (!available.ok) return { skipped: available.note }
    if (!has('pgbench', ['--version'])) return { skipped: 'pgbench is not installed (Debian package postgresql-client)' }
    const db = await freshDatabase(`pgbench_${pooled ? 'pooled_' : ''}${round}`)
    let bouncer
    try {
      if (pooled) {
        try {
          bouncer = await pgBouncerFor(db.url)
        } catch (error) {
          return { skipped: error.message }
        }
      }
      const url = bouncer?.url ?? db.url
      const c = await pgClient(db.url)
      await c.query('DROP TABLE IF EXISTS plant_bench_pgbench')
      await c.query('CREATE TABLE plant_bench_pgbench (id bigint PRIMARY KEY, name text NOT NULL, tag text)')
      await c.end()
      const script = join(runTmp, 'pgbench-insert.sql')
      writeFileSync(script, "\\set id random(1, 9000000000000000000)\nINSERT INTO plant_bench_pgbench (id, name) VALUES (:id, 'bench plant') ON CONFLICT DO NOTHING;\n")
      const clients = options.pgConnections
      const common = ['-n', '-c', String(clients), '-j', String(Math.min(threads, clients)), '-f', script]
      const pgbench = async (seconds, logPrefix) => {
        const argv = ['pgbench', ...common, '-T', String(seconds), ...(logPrefix ? ['-l', `--log-prefix=${logPrefix}`] : []), url]
        const [command, rest] = pinned(loadCpus, argv)
        return run(command, rest, { timeoutMs: (seconds + 30) * 1000, cwd: runTmp })
      }
      await pgbench(options.warmup)
      const prefix = join(runTmp, `pgbench-${round}`)
      const { status, stdout, stderr } = await pgbench(options.duration, prefix)
      const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)
      if (status !== 0 || tps === null) return { skipped: `pgbench failed: ${(stderr || stdout).trim().split('\n').slice(-2).join(' | ')}` }
      const failed = /number of failed transactions: (\d+)/.exec(stdout)
      const latencies = []
      for (const file of readdirSync(runTmp).filter((f) => f.startsWith(`pgbench-${round}.`))) {
        for (const line of readFileSync(join(runTmp, file), 'utf8').split('\n')) {
          const fields = line.split(' ')
          if (fields.length >= 3) latencies.push(Number(fields[2]) / 1000)
        }
        rmSync(join(runTmp, file))
      }
      latencies.sort((a, b) => a - b)
      return { rps: Number(tps[1]), p50: percentile(latencies, 50), p99: percentile(latencies, 99), non2xx: failed === null ? 0 : Number(failed[1]), socketErrors: 0, connections: clients }
    } finally {
      await bouncer?.stop().catch(() => {})
      await db.drop().catch(() => {})
    }
  }

  /** bench/memory-per-plant.js: heap bytes per stored plant, beyond the name strings. */
  async function measurePlantMemory () {
    const { status, stdout, stderr } = await run(process.execPath, ['--expose-gc', join(BENCH, 'memory-per-plant.js'), String(options.plants)], { timeoutMs: 300000 })
    const r = resultLine(stdout)
    if (r === null) return { skipped: `memory-per-plant failed (status ${status}): ${stderr.trim().split('\n').slice(-2).join(' | ')}` }
    return r
  }

  return { load, measurePgbench, measurePlantMemory }
}
