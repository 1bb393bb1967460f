import { isStoreError, StoreFullError, StoreOutcomeUnknownError, WritesFailingError } from '../errors.js'
import { createFailureLog, type FailureLogger } from '../lib/failure-log.js'
import type { Plant, PlantId } from '../schemas.js'
import type { InsertOutcome, PlantRepository } from './plant-repository.js'

export interface ObservedPlantRepositoryOptions {
  log: FailureLogger
  /** At most one line per kind of failure per this interval. Default 1000 ms. */
  intervalMs?: number
}

/**
 * What a store failure is, from the driver's error under the named one: the log groups by it.
 * PostgreSQL SQLSTATEs: 57014 statement timeout (or cancel), 55P03 lock not available, 53100 disk full.
 */
export function failureKind (error: unknown): string {
  if (error instanceof StoreFullError) return 'full'
  // Its own kind, whatever the cause: the lines that count writes whose outcome nobody knows.
  if (error instanceof StoreOutcomeUnknownError) return 'outcome unknown'
  if (error instanceof WritesFailingError) return 'writes failing'
  let cause = (error as { cause?: unknown }).cause
  if (cause === undefined) return 'closed'
  while ((cause as { cause?: unknown }).cause !== undefined) cause = (cause as { cause?: unknown }).cause
  const code = String((cause as { code?: unknown }).code ?? '')
  const message = cause instanceof Error ? cause.message : ''
  if (code === 'ECONNREFUSED') return 'refused'
  if (code === '57014' || code === '55P03' || code === 'ETIMEDOUT' || /timeout/i.test(message)) return 'timeout'
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'busy'
  return 'down'
}

/**
 * Any store, with its failures logged the way an outage should be: the requests it refuses still get
 * their 503/507 and access line each, but the cause is logged once per second per kind of failure
 * (with the count refused since the last line), and once when the store is back (lib/failure-log.ts).
 * errors.ts leaves store failures to this wrapper instead of logging each one.
 */
export function createObservedPlantRepository (inner: PlantRepository, { log, intervalMs = 1000 }: ObservedPlantRepositoryOptions): PlantRepository {
  const failures = createFailureLog({ log, subject: 'store', counted: 'refused', intervalMs })

  function observe (during: string): (error: unknown) => never {
    return (error) => {
      if (isStoreError(error)) {
        failures.failed(failureKind(error), during, error)
      }
      throw error
    }
  }
  const insertFailed = observe('insert')
  const readyFailed = observe('readyz')
  const inserted = (outcome: InsertOutcome): InsertOutcome => {
    if (failures.failing) failures.recovered()
    return outcome
  }
  const isReady = (): void => {
    if (failures.failing) failures.recovered()
  }

  const observed: PlantRepository = {
    insert (id: PlantId, plant: Plant) {
      return inner.insert(id, plant).then(inserted, insertFailed)
    },
    ready () {
      return inner.ready().then(isReady, readyFailed)
    },
    async close () {
      failures.close()
      await inner.close()
    }
  }
  // What the adapter tells the metrics (plants/metered-plant-repository.ts) passes through unchanged.
  if (inner.stats !== undefined) observed.stats = inner.stats.bind(inner)
  if (inner.observe !== undefined) observed.observe = inner.observe.bind(inner)
  return observed
}
