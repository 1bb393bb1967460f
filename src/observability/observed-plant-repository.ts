import { isStoreError, StoreFullError, StoreOutcomeUnknownError, WritesFailingError } from '../errors.js'
import { createFailureLog, summarizeCause, type FailureLogOptions } from '../lib/failure-log.js'
import type { Metrics } from './metrics.js'
import type { Tracing } from './tracing.js'
import type { PlantRepository } from '../plants/plant-repository.js'

/** The failure log's `log` and `intervalMs`, and what counts and traces the inserts. */
export interface ObservedPlantRepositoryOptions extends Pick<FailureLogOptions, 'log' | 'intervalMs'> {
  /** Where inserts are counted and timed (METRICS_PORT); absent: not counted. */
  metrics?: Pick<Metrics, 'storeInsert' | 'watchStore'> | undefined
  /** OpenTelemetry (OTEL_EXPORTER_OTLP_ENDPOINT): a span per insert within a request's span. */
  tracing?: Pick<Tracing, 'startInsert'> | undefined
}

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
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'busy'
  return 'down'
}

/** Any store, observed the same way: each insert counted by outcome, timed and traced; failures logged throttled
 * (lib/failure-log.ts), which the error handler leaves to this wrapper. */
export function createObservedPlantRepository (
  inner: PlantRepository,
  { metrics, tracing, ...logOptions }: ObservedPlantRepositoryOptions
): PlantRepository {
  const failures = createFailureLog({ ...logOptions, subject: 'store', counted: 'refused' })
  metrics?.watchStore(inner)
  const failed = (during: string, error: unknown): never => {
    if (isStoreError(error)) failures.failed(failureKind(error), during, error)
    throw error
  }
  return {
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
    ready: () => inner.ready().then(() => { failures.recovered() }, (error: unknown) => failed('readyz', error)),
    close: () => inner.close()
  }
}
