import type { StoreObserver } from './plant-repository.js'

/** One insert waiting for its group commit. */
export interface Pending<Item, Outcome> {
  item: Item
  /** performance.now() when it was added: its answer is due a bound after this. */
  queuedAt: number
  resolve: (outcome: Outcome) => void
  reject: (error: unknown) => void
}

export interface GroupCommitOptions<Item, Outcome> {
  /** Commits one batch (entries in arrival order) and settles every entry of it. Never throws or rejects. */
  commit: (batch: Array<Pending<Item, Outcome>>) => void | Promise<void>
  /** Entries per batch at most; more wait for the next one. Default: no limit. */
  maxBatch?: number
  /** Batches committing at once; while they run, new entries queue up and leave together. Default 1. */
  maxInFlight?: number
  /**
   * An entry still queued this long after it was added (batches ahead of it are stuck) is refused
   * with `expired()`, before anything of it was sent. Default: entries wait for their turn.
   */
  maxQueueMs?: number
  expired?: () => Error
  /** The error for an entry added after close(). */
  closed: () => Error
}

export interface GroupCommit<Item, Outcome> {
  add (item: Item): Promise<Outcome>
  observe (observer: StoreObserver): void
  /** Refuses what is added from now on, commits what is queued, resolves once every batch is done. */
  close (): Promise<void>
}

/**
 * Group commit, for the SQL stores: entries added in the same turn of the event loop leave together
 * as one batch (one transaction, one fsync or one round trip for all of them), and each entry's
 * promise settles only after the commit that holds it. setImmediate runs after the poll phase, so
 * every request read in this turn joins the batch.
 */
export function createGroupCommit<Item, Outcome> (
  options: GroupCommitOptions<Item, Outcome>
): GroupCommit<Item, Outcome> {
  const { commit, maxBatch = Infinity, maxInFlight = 1, maxQueueMs, closed: closedError } = options
  const { expired = options.closed } = options
  let queue: Array<Pending<Item, Outcome>> = []
  let scheduled = false
  let closed = false
  const inFlight = new Set<Promise<void>>()
  let observer: StoreObserver | undefined
  let expiry: NodeJS.Timeout | undefined

  function schedule (): void {
    if (scheduled || queue.length === 0 || inFlight.size >= maxInFlight) return
    scheduled = true
    setImmediate(dispatch)
  }

  function dispatch (): void {
    scheduled = false
    while (queue.length > 0 && inFlight.size < maxInFlight) {
      const batch = queue.length <= maxBatch ? queue : queue.slice(0, maxBatch)
      queue = queue.length <= maxBatch ? [] : queue.slice(maxBatch)
      observer?.batch(batch.length)
      const running: Promise<void> = Promise.resolve().then(() => commit(batch)).finally(() => {
        inFlight.delete(running)
        schedule()
      })
      inFlight.add(running)
    }
  }

  /** One timer, for the oldest queued entry: entries are queued in arrival order. */
  function armExpiry (): void {
    if (maxQueueMs === undefined || expiry !== undefined || queue.length === 0) return
    const oldest = (queue[0] as Pending<Item, Outcome>).queuedAt
    expiry = setTimeout(expire, Math.max(0, oldest + maxQueueMs - performance.now()))
  }

  function expire (): void {
    expiry = undefined
    const now = performance.now()
    let count = 0
    const waited = (index: number) => now - (queue[index] as Pending<Item, Outcome>).queuedAt
    while (count < queue.length && waited(count) >= (maxQueueMs as number)) count++
    if (count > 0) {
      const gone = queue.slice(0, count)
      queue = queue.slice(count)
      const error = expired()
      for (const pending of gone) pending.reject(error)
    }
    armExpiry()
  }

  return {
    add (item) {
      if (closed) return Promise.reject(closedError())
      return new Promise<Outcome>((resolve, reject) => {
        queue.push({ item, queuedAt: performance.now(), resolve, reject })
        schedule()
        armExpiry()
      })
    },
    observe (next) { observer = next },
    async close () {
      closed = true
      while (queue.length > 0 || inFlight.size > 0) {
        dispatch()
        await Promise.allSettled([...inFlight])
      }
      clearTimeout(expiry)
      expiry = undefined
    }
  }
}
