import { StoreUnavailableError } from '../errors.js'
import type { StoreObserver } from '../plants/plant-repository.js'

/** An insert waiting for its group commit, added at `queuedAt` (performance.now()): its answer is due a bound later. */
export type Pending<Item, Outcome> = PromiseWithResolvers<Outcome> & { item: Item, queuedAt: number }

/**
 * Group commit for the SQL stores: entries added in one turn of the event loop (setImmediate runs after the poll
 * phase) leave as one batch of at most `maxBatch`, one transaction and one fsync or round trip; after close(),
 * StoreUnavailableError. `commit` commits a batch in arrival order and settles each entry, a rejection those left.
 * One at a time until the youngest running has run `aloneMs` by its timer (held by a lock, say), then `maxInFlight`.
 */
export function createGroupCommit<Item, Outcome> (
  commit: (batch: Array<Pending<Item, Outcome>>) => unknown, maxBatch = Infinity, maxInFlight = 1, aloneMs = 0) {
  const queue: Array<Pending<Item, Outcome>> = []
  const running = new Set<Promise<unknown>>()
  const young = new Set<Promise<unknown>>()
  let closed = false
  let observer: StoreObserver | undefined

  function dispatch (): void {
    if (queue.length === 0 || running.size >= (young.size > 0 ? 1 : maxInFlight)) return
    const batch = queue.splice(0, maxBatch)
    observer?.batch(batch.length)
    const batchDone: Promise<unknown> = Promise.resolve().then(() => commit(batch)).catch((error: unknown) => {
      for (const { reject } of batch) reject(error)
    }).finally(() => {
      running.delete(batchDone)
      young.delete(batchDone)
      setImmediate(dispatch)
    })
    running.add(batchDone)
    young.add(batchDone)
    setTimeout(() => { young.delete(batchDone); dispatch() }, aloneMs).unref()
  }

  return {
    add (item: Item): Promise<Outcome> {
      if (closed) return Promise.reject(new StoreUnavailableError())
      const pending = { item, queuedAt: performance.now(), ...Promise.withResolvers<Outcome>() }
      // A queue that was not empty is already due to leave: at the next turn, or when a batch in flight ends or ages.
      if (queue.push(pending) === 1) setImmediate(dispatch)
      return pending.promise
    },
    observe (next: StoreObserver): void { observer = next },
    /** Refuses what is added from now on, commits what is queued, resolves once every batch is done. */
    async close (): Promise<void> {
      closed = true
      while (queue.length > 0 || running.size > 0) {
        dispatch()
        await Promise.allSettled([...running])
      }
    }
  }
}
