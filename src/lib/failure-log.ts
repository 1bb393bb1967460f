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

export interface FailureLog {
  /**
   * Counts one failure of this kind (e.g. "refused", "timeout"; `during` tells where, e.g. "insert",
   * "readyz"). The first one of a kind is logged at once; later ones are counted and logged at most
   * once per interval, with how many there were since the last line and the latest cause.
   */
  failed (kind: string, during: string, cause: unknown): void
  /** It works again: one line with the outage's length and total, then quiet until the next failure. */
  recovered (): void
  /** True between a failure and the recovery. */
  readonly failing: boolean
  /** Stops the timers (the counts not yet logged are dropped). */
  close (): void
}

/** A cause as a log line may carry it: its code and first line, never a stack or a driver's detail. */
export interface CauseSummary {
  code?: string
  message: string
}

const MAX_MESSAGE = 200

/** The innermost cause of an error chain, summarized. */
export function summarizeCause (error: unknown): CauseSummary | undefined {
  let current = error
  for (let depth = 0; depth < 10; depth++) {
    const next = (current as { cause?: unknown } | null | undefined)?.cause
    if (next === undefined || next === null) break
    current = next
  }
  if (current === undefined || current === null) return undefined
  // Node's connect() to a name with several addresses fails with an AggregateError and no message.
  const first = current instanceof AggregateError && current.message === '' ? current.errors[0] as unknown : current
  // Stryker disable next-line StringLiteral: split() always returns one element at least; the fallback is for the type checker
  const message = (first instanceof Error ? first.message : String(first)).split('\n', 1)[0] ?? ''
  const code = (current as { code?: unknown }).code ?? (first as { code?: unknown }).code
  return {
    ...(typeof code === 'string' || typeof code === 'number' ? { code: String(code) } : {}),
    message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message
  }
}

interface KindState {
  kind: string
  during: string
  /** Failures not logged yet. */
  pending: number
  lastCause: unknown
  lastLoggedAt: number
  timer: NodeJS.Timeout | undefined
}

/**
 * Logs a dependency's failures so that an outage does not flood the log pipeline: per kind of
 * failure at most one line per interval, carrying the count since the last line and the cause's
 * code and message (no stack); one line when it works again.
 */
export function createFailureLog ({ log, subject, counted, effect, intervalMs = 1000 }: FailureLogOptions): FailureLog {
  const suffix = effect === undefined ? '' : `: ${effect}`
  const kinds = new Map<string, KindState>()
  let failingSince: number | undefined
  let total = 0

  function write (state: KindState, now: number): void {
    clearTimeout(state.timer)
    state.timer = undefined
    const cause = summarizeCause(state.lastCause)
    log.warn({ subject, failure: state.kind, during: state.during, [counted]: state.pending, ...(cause === undefined ? {} : { cause }) },
      `${subject} failing (${state.kind}, ${state.during})${suffix}`)
    state.pending = 0
    state.lastLoggedAt = now
  }

  return {
    get failing () {
      return failingSince !== undefined
    },
    failed (kind, during, cause) {
      const now = Date.now()
      failingSince ??= now
      total++
      const key = `${during}\0${kind}`
      let state = kinds.get(key)
      if (state === undefined) {
        state = { kind, during, pending: 0, lastCause: undefined, lastLoggedAt: -Infinity, timer: undefined }
        kinds.set(key, state)
      }
      state.pending++
      state.lastCause = cause
      if (now - state.lastLoggedAt >= intervalMs) {
        write(state, now)
      } else if (state.timer === undefined) {
        const current = state
        current.timer = setTimeout(() => write(current, Date.now()), current.lastLoggedAt + intervalMs - now)
        current.timer.unref()
      }
    },
    recovered () {
      if (failingSince === undefined) return
      for (const state of kinds.values()) clearTimeout(state.timer)
      kinds.clear()
      log.info({ subject, failedMs: Date.now() - failingSince, [counted]: total }, `${subject} back`)
      failingSince = undefined
      total = 0
    },
    close () {
      for (const state of kinds.values()) clearTimeout(state.timer)
      kinds.clear()
    }
  }
}
