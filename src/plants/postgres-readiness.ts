import { WritesFailingError } from '../errors.js'
import { notConnected } from './postgres-session.js'

/**
 * A write that succeeded this recently says the store takes writes now: no probe. Also the least time
 * between two probes: at most one small write per second per replica, and none while creates succeed.
 */
export const FRESH_MS = 1000

export interface WriteHealth {
  /** Runs one write (a batch's insert, a probe), recording when it started and how it ended. */
  track<T> (write: () => Promise<T>): Promise<T>
  /** Resolves when a create would succeed now; rejects with the reason (README, High availability). */
  ready (): Promise<void>
  /** Resolves once no probe is running (close). */
  idle (): Promise<void>
}

/**
 * Readiness that tells the truth about writes. Reads can work while writes cannot (a synchronous
 * standby gone: commits wait; a primary turned read-only), so readiness watches the writes:
 * - a write (create or probe) in flight for the statement timeout or longer: not ready, at once;
 * - a write that succeeded within FRESH_MS: ready, nothing written;
 * - otherwise `probe` runs (one at a time, at most one per FRESH_MS): a write as a create does it
 *   (WAL, synchronous commit, the table's insert lock), and its outcome is the answer. So one failed
 *   batch followed by none is not a 503 unless the probe fails too. ready() answers within the
 *   statement timeout: a probe that has not answered by then is a 503 (it goes on, and is cancelled
 *   by its deadline as a create would be).
 */
export function createWriteHealth ({ statementTimeoutMs, probe }: { statementTimeoutMs: number, probe: () => Promise<unknown> }): WriteHealth {
  const inFlight = new Set<{ since: number }>()
  let last: { ok: boolean, at: number, error?: unknown } | undefined
  let failingSince: number | undefined
  let probing: Promise<void> | undefined
  let probeStarted: number | undefined

  async function track<T> (write: () => Promise<T>): Promise<T> {
    const entry = { since: performance.now() }
    inFlight.add(entry)
    try {
      const value = await write()
      last = { ok: true, at: performance.now() }
      failingSince = undefined
      return value
    } catch (error) {
      last = { ok: false, at: performance.now(), error }
      failingSince ??= entry.since
      throw error
    } finally {
      inFlight.delete(entry)
    }
  }

  function oldest (): number | undefined {
    let since: number | undefined
    for (const entry of inFlight) if (since === undefined || entry.since < since) since = entry.since
    return since
  }

  /** No connection at all: the store's own error (the service is not ready). Otherwise: writes fail, for how long. */
  function failing (now: number): unknown {
    if (last !== undefined && !last.ok && notConnected(last.error) && oldest() === undefined) return last.error
    return new WritesFailingError(String(Math.round(now - (failingSince ?? oldest() ?? now))))
  }

  return {
    track,
    idle: async () => { await probing },
    async ready () {
      const now = performance.now()
      const since = oldest()
      if (since !== undefined && now - since >= statementTimeoutMs) throw failing(now)
      if (last?.ok === true && now - last.at < FRESH_MS) return
      if (probing === undefined) {
        if (probeStarted !== undefined && now - probeStarted < FRESH_MS && last !== undefined) {
          if (last.ok) return
          throw failing(now)
        }
        probeStarted = now
        probing = track(probe).then(ignore, ignore).finally(() => { probing = undefined })
      }
      // The probe's answer, or the moment a write in flight (the probe too) has waited the statement timeout.
      let timer: NodeJS.Timeout | undefined
      const stalled = new Promise<false>((resolve) => {
        timer = setTimeout(resolve, (oldest() ?? now) + statementTimeoutMs - now, false)
      })
      const done = await Promise.race([probing.then(() => true), stalled])
      clearTimeout(timer)
      if (done && last?.ok === true) return
      throw failing(performance.now())
    }
  }
}

function ignore (): void {}
