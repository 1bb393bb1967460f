/** The two levels a failure log writes at (a pino logger has them). */
export interface FailureLogger {
  warn (fields: object, message: string): void
  info (fields: object, message: string): void
}

export interface FailureLogOptions {
  log: FailureLogger
  /** What fails, in the messages and as the `subject` field: "store", "rate limit store (Redis)". */
  subject: string
  /** The name of the count field: "refused" (requests answered 503/507), "errors". */
  counted: string
  /** What a failure means for the requests, appended to the failure lines' message. */
  effect?: string
  /** At most one line per kind of failure per this interval. Default 1000 ms. */
  intervalMs?: number
}

type Chain = { cause?: unknown, code?: unknown } | null | undefined

/** The innermost cause of an error chain: its code and first line, never a stack or a driver's detail. */
export function summarizeCause (error: unknown): { code?: string, message: string } | undefined {
  let current = error as Chain
  for (let depth = 0; depth < 10 && current?.cause != null; depth++) current = current.cause as Chain
  if (current == null) return undefined
  // Node's connect() to a name with several addresses fails with an AggregateError and no message.
  const first: unknown = current instanceof AggregateError && current.message === '' ? current.errors[0] : current
  const message = (first instanceof Error ? first.message : String(first)).replace(/\n[\s\S]*/, '')
  const code = current.code ?? (first as Chain)?.code
  return {
    ...(typeof code === 'string' || typeof code === 'number' ? { code: String(code) } : {}),
    message: message.length > 200 ? `${message.slice(0, 200)}…` : message
  }
}

/** A dependency's failures without flooding the log: per kind at most one line per interval, with the count since
 * the last line and the cause; one line when it works again, with the outage's total. */
export function createFailureLog ({ log, subject, counted, effect, intervalMs = 1000 }: FailureLogOptions) {
  // Per kind of failure (where and what): the failures not logged yet, and when its last line was written.
  const kinds = new Map<string, { pending: number, loggedAt: number }>()
  let failingSince: number | undefined
  let total = 0

  return {
    /** Counts one failure of this kind (`during`: where, e.g. "insert", "readyz"). */
    failed (kind: string, during: string, error: unknown) {
      const now = Date.now()
      failingSince ??= now
      total++
      const key = `${during}\0${kind}`
      const state = kinds.get(key) ?? { pending: 0, loggedAt: -Infinity }
      kinds.set(key, state)
      state.pending++
      if (now - state.loggedAt < intervalMs) return
      const cause = summarizeCause(error)
      log.warn({ subject, failure: kind, during, [counted]: state.pending, ...(cause && { cause }) },
        `${subject} failing (${kind}, ${during})${effect === undefined ? '' : `: ${effect}`}`)
      state.pending = 0
      state.loggedAt = now
    },
    /** It works again: one line with the outage's length and total, then quiet until the next failure. */
    recovered () {
      if (failingSince === undefined) return
      log.info({ subject, failedMs: Date.now() - failingSince, [counted]: total }, `${subject} back`)
      kinds.clear()
      failingSince = undefined
      total = 0
    }
  }
}
