import { isStoreError, StoreFullError, StoreOutcomeUnknownError, WritesFailingError } from '../errors.js'
import { createFailureLog, summarizeCause, type FailureLogger } from './failure-log.js'
import type { Metrics } from './metrics.js'
import type { Tracing } from './tracing.js'
import type { PlantRepository } from '../plants/plant-repository.js'

/** What a store failure is, from the driver's error under the named one, for the log to group by. PostgreSQL
 * SQLSTATEs: 57014 statement timeout (or cancel), 55P03 lock not available, 53100 disk full. */
export function failureKind (error: unknown): string {
  if (error instanceof StoreFullError) return 'full'
  // Its own kind, whatever the cause: the lines that count writes whose outcome nobody knows.
  if (error instanceof StoreOutcomeUnknownError) return 'outcome unknown'
  if (error instanceof WritesFailingError) return 'writes failing'
  const cause = summarizeCause((error as { cause?: unknown }).cause)
  if (cause === undefined) return 'closed'
  const code = String(cause.code)
  if (code === 'ECONNREFUSED') return 'refused'
  if (['57014', '55P03', 'ETIMEDOUT'].includes(code) || /timeout/i.test(cause.message)) return 'timeout'
  return code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED') ? 'busy' : 'down'
}

/** Any store, observed the same way: each insert counted by outcome and timed (`metrics`), traced (`tracing`); failures
 * logged throttled to `log` (failure-log.ts), which the error handler leaves to this wrapper. */
export function createObservedPlantRepository (inner: PlantRepository, log: FailureLogger, metrics?: Metrics,
  tracing?: Tracing): PlantRepository {
  const failures = createFailureLog({ log, subject: 'store' })
  metrics?.watchStore(inner)
  const failed = (during: string, error: unknown): never => {
    if (isStoreError(error)) failures.failed(failureKind(error), during, error)
    throw error
  }
  return {
    // close, and what the metrics read (stats, observe), are the store's own.
    ...inner,
    insert (id, plant) {
      const start = performance.now()
      const span = tracing?.startInsert()
      return inner.insert(id, plant).then((outcome) => {
        metrics?.storeInsert(outcome, (performance.now() - start) / 1000)
        span?.(outcome)
        failures.recovered()
        return outcome
      }, (error: unknown) => {
        const outcome = error instanceof StoreOutcomeUnknownError ? 'unknown' : 'error'
        metrics?.storeInsert(outcome, (performance.now() - start) / 1000)
        span?.(outcome, error)
        return failed('insert', error)
      })
    },
    ready: () => inner.ready().then(() => { failures.recovered() }, (error: unknown) => failed('readyz', error))
  }
}
