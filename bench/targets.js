// The target registry of `npm run bench`: every target's name, what is started, with which
// environment, and whether it is in the default run. Adding a target is one entry here (plus, when
// it has a pass/fail check, one entry in CHECKS of bench/report.js).
//
// An entry:
//   name       the name given to --targets
//   kind       'http': a server started as a child process on its own port and loaded over HTTP
//                (bench/run.js measureHttp); 'pgbench': pgbench itself (bench/load.js);
//              'plant-memory': measured once, after the rounds (bench/memory-per-plant.js)
//   optIn      absent: in the default run; a string (where it comes from): only when named in --targets
//   script     http: the script node runs
//   service    http: the real service (--cpu-prof applies; /readyz must answer 200 before the load)
//   pg         http: loaded at --pg-connections instead of --connections
//   stdoutRate http: stdout is a pipe the bench reads at this many bytes a second (Infinity: at
//              full speed); absent: stdout is a file
//   prepare(round, ctx)  http: resolves { env } (the whole environment; the bench sets PORT and HOST),
//              or { skipped: why }; optionally cleanup() (run after the round) and note
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { pgBouncerFor } from './pgbouncer.js'
import { freshDatabase, postgresAvailable } from './postgres.js'
import { BENCH, ROOT, TOKEN } from './util.js'

const SERVICE = join(ROOT, 'dist', 'server.js')

/** The service's environment: its own settings come from the bench only, never from the caller's shell. */
export const serviceEnv = (extra) => {
  const own = new Set(['PORT', 'HOST', 'LOG_LEVEL', 'API_TOKENS', 'API_TOKENS_FILE', 'DATABASE_URL', 'DATABASE_POOL_MAX', 'DATABASE_STATEMENT_TIMEOUT_MS', 'DATABASE_PREPARED_STATEMENTS', 'BODY_LIMIT', 'MAX_PLANTS', 'NODE_OPTIONS', 'METRICS_PORT', 'METRICS_HOST', 'OTEL_EXPORTER_OTLP_ENDPOINT'])
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !own.has(name)))
  // Metrics on, as the Docker image runs them (METRICS_PORT=9464): a free port, nothing scrapes it. No OTLP export.
  return { ...env, API_TOKENS: TOKEN, LOG_LEVEL: 'info', MAX_PLANTS: '16000000', METRICS_PORT: '0', ...extra }
}
/** A baseline's environment: the caller's, plus its own variables. */
const plainEnv = (extra) => async () => ({ env: { ...process.env, ...extra, PORT: '' } })

/**
 * The service on a fresh PostgreSQL database per round (named `<prefix>_<round>`), with `extra` in
 * its environment; `pooled`: through a PgBouncer in transaction mode started for the round.
 */
function postgresTarget (name, prefix, extra, { pooled = false, multiHost = false } = {}) {
  return {
    name,
    kind: 'http',
    script: SERVICE,
    service: true,
    pg: true,
    prepare: async (round) => {
      const available = await postgresAvailable()
      if (!available.ok) return { skipped: available.note }
      const db = await freshDatabase(`${prefix}_${round}`)
      let bouncer
      if (pooled) {
        try {
          bouncer = await pgBouncerFor(db.url)
        } catch (error) {
          await db.drop()
          return { skipped: error.message }
        }
      }
      return {
        env: serviceEnv({ DATABASE_URL: multiHost ? twoHosts(db.url) : bouncer?.url ?? db.url, ...extra }),
        cleanup: async () => { await bouncer?.stop(); await db.drop() },
        note: db.note
      }
    }
  }
}

/**
 * The same server twice in libpq's multi-host form with target_session_attrs=read-write: the host
 * selection layer (src/plants/postgres-session.ts) runs, checks the first host, and every batch then
 * goes through it. Beside `postgres`: what that layer costs per request.
 */
function twoHosts (url) {
  const parsed = new URL(url)
  parsed.searchParams.set('target_session_attrs', 'read-write')
  return parsed.toString().replace(`@${parsed.host}/`, `@${parsed.host},${parsed.host}/`)
}

/** bench/feature-ladder.js steps: what each feature costs (opt-in, never in the default run). */
const LADDER_STEPS = [1, 2, 3, 4, 5, 6, 7]

export const TARGETS = [
  { name: 'baseline-raw', kind: 'http', script: join(BENCH, 'baseline-raw.js'), prepare: plainEnv({}) },
  { name: 'baseline-fastify', kind: 'http', script: join(BENCH, 'baseline-fastify.js'), prepare: plainEnv({}) },
  // The same contract written the obvious way (bench/peer.js): Fastify's defaults, bearer auth, its
  // request log at info to stdout (a file, as for the service), prom-client metrics, a Map as the store.
  { name: 'peer', kind: 'http', script: join(BENCH, 'peer.js'), prepare: plainEnv({ API_TOKENS: TOKEN, LOG_LEVEL: 'info', METRICS_PORT: '0' }) },
  { name: 'memory', kind: 'http', script: SERVICE, service: true, prepare: async () => ({ env: serviceEnv({}) }) },
  // The memory target without its metrics listener (METRICS_PORT empty: nothing counted, prom-client
  // not loaded): side by side with `memory`, what metrics cost per request.
  { name: 'memory-no-metrics', kind: 'http', optIn: 'the cost of metrics', script: SERVICE, service: true, prepare: async () => ({ env: serviceEnv({ METRICS_PORT: '' }) }) },
  // The memory target with stdout a pipe read at full speed, and one read at 64 KB/s (a log shipper
  // that falls behind): side by side, what a slow log reader costs (lib/log-destination.ts: lines,
  // never requests). Both at LOG_LEVEL=info, so that every request writes its access line.
  { name: 'log-pipe-fast', kind: 'http', script: SERVICE, service: true, stdoutRate: Infinity, prepare: async () => ({ env: serviceEnv({}) }) },
  { name: 'log-pipe-slow', kind: 'http', script: SERVICE, service: true, stdoutRate: 64 * 1024, prepare: async () => ({ env: serviceEnv({}) }) },
  // The Docker image's glibc settings (Dockerfile ENV: MALLOC_ARENA_MAX=2, MALLOC_MMAP_THRESHOLD_) with the
  // mmap threshold it had (64 KiB) and the one it has (16 KiB, the default BODY_LIMIT): side by side, what
  // mapping each allocation from 16 KiB up costs. With the default name nothing is that large; run them with
  // BENCH_NAME set to a 16,000-character name (docs/performance.md) for requests at the body limit.
  { name: 'malloc-mmap-64k', kind: 'http', optIn: "the image's malloc settings", script: SERVICE, service: true, prepare: async () => ({ env: serviceEnv({ MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '65536' }) }) },
  { name: 'malloc-mmap-16k', kind: 'http', optIn: "the image's malloc settings", script: SERVICE, service: true, prepare: async () => ({ env: serviceEnv({ MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '16384' }) }) },
  {
    name: 'sqlite',
    kind: 'http',
    script: SERVICE,
    service: true,
    // On the project's disk (not a tmpfs), so that the fsync before each 200 is a real one.
    prepare: async (round, { runTmp }) => {
      const file = join(runTmp, `bench-${round}.db`)
      return {
        env: serviceEnv({ DATABASE_URL: `sqlite:${file}` }),
        cleanup: async () => { for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true }) }
      }
    }
  },
  postgresTarget('postgres', 'service', {}),
  // postgres with DATABASE_PREPARED_STATEMENTS=on (three pipelined messages per batch, the insert
  // prepared once per connection) beside the default one message per batch: whether the opt-in pays.
  { ...postgresTarget('postgres-prepared', 'prepared', { DATABASE_PREPARED_STATEMENTS: 'on' }), optIn: 'the cost of DATABASE_PREPARED_STATEMENTS' },
  // A multi-host URL (the same server twice, target_session_attrs=read-write) beside postgres: the cost of host selection.
  { ...postgresTarget('postgres-multihost', 'multihost', {}, { multiHost: true }), optIn: 'the cost of a multi-host DATABASE_URL' },
  // The same service and load through PgBouncer in transaction mode, started here (bench/pgbouncer.js).
  postgresTarget('postgres-pooled', 'pooled', {}, { pooled: true }),
  { name: 'pgbench', kind: 'pgbench' },
  // pgbench's same insert through a PgBouncer of its own (transaction mode, bench/pgbouncer.js): what
  // the pooler's hop costs a client that has no HTTP in its loop, beside postgres-pooled.
  { name: 'pgbench-pooled', kind: 'pgbench', pooled: true },
  { name: 'plant-memory', kind: 'plant-memory' },
  ...LADDER_STEPS.map((step) => ({
    name: `ladder-${step}`,
    kind: 'http',
    optIn: 'bench/feature-ladder.js',
    script: join(BENCH, 'feature-ladder.js'),
    prepare: plainEnv({ STEP: String(step), API_TOKENS: TOKEN })
  }))
]

export const targetByName = new Map(TARGETS.map((t) => [t.name, t]))
export const DEFAULT_TARGETS = TARGETS.filter((t) => t.optIn === undefined).map((t) => t.name)
/** Opt-in targets grouped by where they come from: [[optIn, [names…]], …]. */
export const OPT_IN_GROUPS = [...new Set(TARGETS.map((t) => t.optIn).filter((from) => from !== undefined))]
  .map((from) => [from, TARGETS.filter((t) => t.optIn === from).map((t) => t.name)])
