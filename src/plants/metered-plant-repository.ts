import { Gauge, type Registry } from 'prom-client'
import { StoreOutcomeUnknownError } from '../errors.js'
import { HotCounter, HotHistogram, type CounterChild } from '../lib/hot-metrics.js'
import type { InsertOutcome, PlantRepository, StoreStats } from './plant-repository.js'

/** Seconds: from 0.5 ms (a memory insert) to 10 s (past the PostgreSQL statement timeout). */
export const STORE_DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/** Inserts per group commit; a PostgreSQL batch holds at most 1000. */
export const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000]

/** The gauges a store's stats() can feed, by the field that feeds each. */
const STAT_GAUGES: ReadonlyArray<[keyof StoreStats, string, string]> = [
  ['plants', 'plant_store_memory_plants', 'Plants held by the memory store.'],
  ['capacity', 'plant_store_memory_capacity_plants', 'Plants the memory store can hold (MAX_PLANTS); beyond it a create is a 507.'],
  ['bytes', 'plant_store_memory_bytes',
    'Bytes the memory store\'s plants hold (UTF-8 names and tags, the id index), against MEMORY_STORE_MAX_BYTES.'],
  ['capacityBytes', 'plant_store_memory_capacity_bytes',
    'Bytes the memory store\'s plants may hold (MEMORY_STORE_MAX_BYTES); beyond it a create is a 507.'],
  ['poolConnections', 'plant_store_pool_connections', 'PostgreSQL connections the pool holds open, busy or idle.'],
  ['poolIdleConnections', 'plant_store_pool_idle_connections', 'PostgreSQL connections open and idle in the pool.'],
  ['poolWaitingRequests', 'plant_store_pool_waiting_requests', 'Store calls waiting for a free PostgreSQL connection.']
]

/**
 * The same metrics for every store, around any adapter: inserts by outcome, and how long each
 * insert took, from the call until its promise settles (for SQLite and PostgreSQL that includes
 * waiting for the group commit that holds it). A failed insert counts as `error`, or `unknown` when
 * the store cannot tell whether it was stored (PostgreSQL), and is rethrown unchanged. What only some stores know (group-commit sizes, the pool, the memory store's fill)
 * comes from the adapter's optional observe() and stats(), exported only when it has them.
 */
export function createMeteredPlantRepository (inner: PlantRepository, registry: Registry): PlantRepository {
  const inserts = new HotCounter({
    name: 'plant_store_inserts_total',
    help: 'Store inserts by outcome: created, same (the identical plant was stored), conflict (another plant has the id), error (the store failed: nothing stored), unknown (the store lost the write after it was sent: stored or not).',
    labelNames: ['outcome'],
    registry
  })
  const outcomes: Record<InsertOutcome, CounterChild> = {
    created: inserts.child({ outcome: 'created' }),
    same: inserts.child({ outcome: 'same' }),
    conflict: inserts.child({ outcome: 'conflict' })
  }
  const errors = inserts.child({ outcome: 'error' })
  const unknown = inserts.child({ outcome: 'unknown' })
  const duration = new HotHistogram({
    name: 'plant_store_insert_duration_seconds',
    help: 'Time of one store insert, group-commit wait included, in seconds.',
    buckets: STORE_DURATION_BUCKETS,
    registry
  }).child()

  if (inner.observe !== undefined) {
    const batches = new HotHistogram({
      name: 'plant_store_group_commit_batch_size',
      help: 'Inserts per group commit (one SQLite transaction, or one PostgreSQL statement).',
      buckets: BATCH_SIZE_BUCKETS,
      registry
    }).child()
    inner.observe({ batch: (size) => batches.observe(size) })
  }
  const stats = inner.stats?.bind(inner)
  if (stats !== undefined) {
    const known = stats()
    for (const [field, name, help] of STAT_GAUGES) {
      if (known[field] === undefined) continue
      // Read when scraped, never per request.
      registry.registerMetric(new Gauge({ name, help, registers: [], collect () { this.set(stats()[field] ?? 0) } }))
    }
  }

  return {
    insert (id, plant) {
      const start = performance.now()
      return inner.insert(id, plant).then((outcome) => {
        duration.observe((performance.now() - start) / 1000)
        outcomes[outcome].inc()
        return outcome
      }, (error: unknown) => {
        duration.observe((performance.now() - start) / 1000)
        if (error instanceof StoreOutcomeUnknownError) unknown.inc()
        else errors.inc()
        throw error
      })
    },
    ready: () => inner.ready(),
    close: () => inner.close(),
    ...(stats === undefined ? {} : { stats })
  }
}
