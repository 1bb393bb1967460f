import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { InsertOutcome, PlantRepository, StoreStats } from '../plants/plant-repository.js'

/** Seconds: from 0.5 ms (a request served from memory) to 10 s (past every timeout). */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/** The gauges a store's stats() can feed, by the field that feeds each. */
const STAT_GAUGES: ReadonlyArray<[keyof StoreStats, string, string]> = [
  ['plants', 'plant_store_memory_plants', 'Plants held by the memory store.'],
  ['capacity', 'plant_store_memory_capacity_plants', 'Plants the memory store can hold (MAX_PLANTS).'],
  ['poolConnections', 'plant_store_pool_connections', 'PostgreSQL connections the pool holds open, busy or idle.'],
  ['poolIdleConnections', 'plant_store_pool_idle_connections', 'PostgreSQL connections open and idle in the pool.'],
  ['poolWaitingRequests', 'plant_store_pool_waiting_requests', 'Store calls waiting for a free PostgreSQL connection.']
]

/** Everything the service exports, in a Registry of its own (never prom-client's global one). */
export function createMetrics () {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  // Gauges that prom-client names like counters (promtool: "non-counter metrics should not have
  // _total suffix"); nodejs_active_handles, _requests and _resources, by type, remain: sum them.
  for (const kind of ['handles', 'requests', 'resources']) registry.removeSingleMetric(`nodejs_active_${kind}_total`)
  // A counter whose label values are exported as 0 from the start, so that increase() sees the first one.
  const counter = (name: string, help: string, labels: Record<string, string[]> = {}) => {
    const one = new Counter({ name, help, labelNames: Object.keys(labels), registers: [registry] })
    for (const [label, values] of Object.entries(labels)) for (const value of values) one.inc({ [label]: value }, 0)
    return one
  }
  const reloads = counter('plant_store_token_reloads_total',
    'Reloads of API_TOKENS_FILE: ok, or refused (none added, those it no longer lists revoked).',
    { result: ['ok', 'refused'] })
  const dropped = counter('plant_store_log_lines_dropped_total',
    'Log lines dropped because the log reader (stdout) fell behind by more than LOG_BUFFER_MAX_BYTES.')
  const inserts = counter('plant_store_inserts_total',
    'Store inserts by outcome: created, same, conflict, error (nothing stored), unknown (stored or not).',
    { outcome: ['created', 'same', 'conflict', 'error', 'unknown'] })
  const histogram = (name: string, help: string, labelNames: string[] = [], buckets = DURATION_BUCKETS) =>
    new Histogram({ name, help, labelNames, buckets, registers: [registry] })
  const insertSeconds = histogram('plant_store_insert_duration_seconds',
    'Time of one store insert, group-commit wait included, in seconds.')
  const requests = histogram('http_server_request_duration_seconds',
    'Duration of HTTP server requests, from arrival to the end of the reply, in seconds.',
    ['http_request_method', 'http_route', 'http_response_status_code'])
  // Exported for every store, at 0 for one that does not commit in groups. A PostgreSQL batch holds at most 1000.
  const batches = histogram('plant_store_group_commit_batch_size',
    'Inserts per group commit (one SQLite transaction, or one PostgreSQL statement).', [],
    [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000])

  return {
    exposition: registry,
    /** One request done, its route `unmatched` when none matched (never the raw path); Node bounds the method. */
    requestDone: (method: string, route = 'unmatched', status: number, seconds: number): void =>
      requests.observe({ http_request_method: method, http_route: route, http_response_status_code: status }, seconds),
    /** A reload of API_TOKENS_FILE: taken, or refused (config/token-reload.ts says what stays). */
    tokenReload: (taken: boolean) => { reloads.inc({ result: taken ? 'ok' : 'refused' }) },
    logLineDropped: () => { dropped.inc() },
    storeInsert (outcome: InsertOutcome | 'error' | 'unknown', seconds: number) {
      inserts.inc({ outcome })
      insertSeconds.observe(seconds)
    },
    /** Exports what this store tells of itself: group-commit sizes, its pool or fill (read when scraped). */
    watchStore (store: PlantRepository) {
      store.observe?.({ batch: (size) => { batches.observe(size) } })
      const stats = (): StoreStats => store.stats?.() ?? {}
      for (const [field, name, help] of STAT_GAUGES.filter(([field]) => stats()[field] !== undefined)) {
        registry.registerMetric(new Gauge({ name, help, registers: [], collect () { this.set(stats()[field] ?? 0) } }))
      }
    }
  }
}

export type Metrics = ReturnType<typeof createMetrics>
