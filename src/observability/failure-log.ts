/** The two levels a failure log writes at (a pino logger has them). */
export type FailureLogger = Record<'warn' | 'info', (fields: object, message: string) => void>

const INTERVAL_MS = 1000

type Chain = { cause?: unknown, code?: unknown } | null | undefined

/** The innermost cause of an error chain: its code and first line, never a stack or a driver's detail. */
export function summarizeCause (error: unknown): { code?: string, message: string } | undefined {
  let current = error as Chain
  for (let depth = 0; depth < 10 && current?.cause != null; depth++) current = current.cause as Chain
  if (current == null) return undefined
  // Node's connect() to a name with several addresses fails with an AggregateError and no message.
  const first: unknown = current instanceof AggregateError && current.message === '' ? current.errors[0] : current
  const line = (first instanceof Error ? first.message : String(first)).replace(/\n[\s\S]*/, '')
  const summary = { message: line.length > 200 ? `${line.slice(0, 200)}…` : line }
  const code = current.code ?? (first as Chain)?.code
  return typeof code === 'string' || typeof code === 'number' ? { code: String(code), ...summary } : summary
}

/** A dependency's failures without flooding the log: per kind at most one line a second, with the count since the
 * last (`failures`) and the cause; one line when it works again, with the outage's total. `subject` names what
 * fails; `effect`, what a failure means for the requests, ends the failure lines' message. */
export function createFailureLog ({ log, subject, effect }: { log: FailureLogger, subject: string, effect?: string }) {
  // Since the first failure: their count and, per kind (where and what), those not logged yet and its last line's time.
  let outage: { since: number, failures: number, kinds: Map<string, { pending: number, loggedAt: number }> } | undefined

  return {
    /** Counts one failure of this kind (`during`: where, e.g. "insert", "readyz"). */
    failed (kind: string, during: string, error: unknown) {
      const now = Date.now()
      outage ??= { since: now, failures: 0, kinds: new Map() }
      outage.failures++
      const key = `${during}\0${kind}`
      const state = outage.kinds.get(key) ?? { pending: 0, loggedAt: -Infinity }
      state.pending++
      if (now - state.loggedAt < INTERVAL_MS) return
      // pino leaves out a field whose value is undefined: no cause, no field.
      log.warn({ subject, failure: kind, during, failures: state.pending, cause: summarizeCause(error) },
        `${subject} failing (${kind}, ${during})${effect === undefined ? '' : `: ${effect}`}`)
      outage.kinds.set(key, { pending: 0, loggedAt: now })
    },
    /** It works again: one line with the outage's length and total, then quiet until the next failure. */
    recovered () {
      if (outage === undefined) return
      log.info({ subject, failedMs: Date.now() - outage.since, failures: outage.failures }, `${subject} back`)
      outage = undefined
    }
  }
}
