import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { StoreUnavailableError } from '../../src/errors.js'
import { createGroupCommit, type Pending } from '../../src/sql/group-commit.js'

describe('group commit (shared by the SQLite and PostgreSQL stores)', () => {
  it('sends the entries added in one turn as one batch, in arrival order, and settles each with its own outcome', async () => {
    const batches: number[][] = []
    const group = createGroupCommit<number, string>((batch) => {
      batches.push(batch.map((pending) => pending.item))
      for (const pending of batch) pending.resolve(`done ${pending.item}`)
    })
    const sizes: number[] = []
    group.observe({ batch: (size) => sizes.push(size) })
    expect(await Promise.all([1, 2, 3].map((n) => group.add(n)))).toEqual(['done 1', 'done 2', 'done 3'])
    expect(await group.add(4)).toBe('done 4')
    expect(batches).toEqual([[1, 2, 3], [4]])
    expect(sizes).toEqual([3, 1])
  })

  it('splits at maxBatch and runs at most maxInFlight batches at once; the rest queue and leave together', async () => {
    const running: Array<Array<Pending<number, number>>> = []
    let most = 0
    const commit = (batch: Array<Pending<number, number>>) => new Promise<void>((resolve) => {
      running.push(batch)
      most = Math.max(most, running.length)
      setTimeout(() => {
        running.splice(running.indexOf(batch), 1)
        for (const pending of batch) pending.resolve(pending.item)
        resolve()
      }, 20)
    })
    const [maxBatch, maxInFlight] = [2, 2]
    const group = createGroupCommit(commit, maxBatch, maxInFlight)
    const sizes: number[] = []
    group.observe({ batch: (size) => sizes.push(size) })
    const all = Array.from({ length: 9 }, (_, n) => group.add(n))
    expect(await Promise.all(all)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8])
    expect(most).toBe(2)
    expect(sizes).toEqual([2, 2, 2, 2, 1])
  })

  it('with aloneMs, commits one batch at a time until the youngest running has run aloneMs by its timer, then up to ' +
    'maxInFlight', async () => {
    // performance.now() stays real, so it has not moved when a timer fires: the batch's own timer decides, as it must
    // when a timer fires before performance.now() has moved aloneMs.
    vi.useFakeTimers({ toFake: ['setTimeout'] })
    onTestFinished(() => { vi.useRealTimers() })
    const started: number[][] = []
    const done = new Map<number, () => void>()
    const group = createGroupCommit<number, number>((batch) => new Promise<void>((resolve) => {
      started.push(batch.map(({ item }) => item))
      done.set(batch[0]?.item as number, () => {
        for (const pending of batch) pending.resolve(pending.item)
        resolve()
      })
    }), Infinity, 3, 100)
    const turn = () => new Promise((resolve) => { setImmediate(resolve) })
    const added = [group.add(1)]
    await turn()
    expect(started).toEqual([[1]])
    added.push(group.add(2))
    await turn()
    await vi.advanceTimersByTimeAsync(99)
    expect(started).toEqual([[1]])
    await vi.advanceTimersByTimeAsync(1)
    expect(started).toEqual([[1], [2]])
    // [1] has run 100 ms, [2] none: the youngest decides.
    added.push(group.add(3))
    await turn()
    expect(started).toEqual([[1], [2]])
    await vi.advanceTimersByTimeAsync(100)
    expect(started).toEqual([[1], [2], [3]])
    added.push(group.add(4), group.add(5))
    await vi.advanceTimersByTimeAsync(100)
    await turn()
    expect(started).toEqual([[1], [2], [3]])
    done.get(1)?.()
    await turn()
    await turn()
    expect(started).toEqual([[1], [2], [3], [4, 5]])
    for (const item of [2, 3, 4]) done.get(item)?.()
    expect(await Promise.all(added)).toEqual([1, 2, 3, 4, 5])
  })

  it('with aloneMs, lets a batch that ended young hold no other back', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout'] })
    onTestFinished(() => { vi.useRealTimers() })
    const started: number[] = []
    const done = new Map<number, () => void>()
    const group = createGroupCommit<number, number>((batch) => new Promise<void>((resolve) => {
      started.push(batch[0]?.item as number)
      done.set(batch[0]?.item as number, () => {
        for (const pending of batch) pending.resolve(pending.item)
        resolve()
      })
    }), Infinity, 3, 100)
    const turn = () => new Promise((resolve) => { setImmediate(resolve) })
    const held = group.add(1)
    await turn()
    await vi.advanceTimersByTimeAsync(100)
    // [1] is held (by a lock, say) and has run 100 ms: [2] starts beside it and ends at once, young.
    const quick = group.add(2)
    await turn()
    done.get(2)?.()
    expect(await quick).toBe(2)
    const next = group.add(3)
    await turn()
    await turn()
    expect(started).toEqual([1, 2, 3])
    for (const item of [1, 3]) done.get(item)?.()
    expect(await Promise.all([held, next])).toEqual([1, 3])
  })

  it('rejects the entries a failed commit left unsettled with its error, keeps those it settled, and commits the next batch', async () => {
    const failure = new Error('the disk is gone')
    let calls = 0
    const group = createGroupCommit<number, number>(async (batch) => {
      if (++calls > 1) {
        for (const pending of batch) pending.resolve(pending.item)
        return
      }
      batch[0]?.resolve(0)
      throw failure
    })
    const outcomes = await Promise.allSettled([0, 1, 2].map((n) => group.add(n)))
    expect(outcomes).toEqual([
      { status: 'fulfilled', value: 0 },
      { status: 'rejected', reason: failure },
      { status: 'rejected', reason: failure }
    ])
    expect(await group.add(3)).toBe(3)
  })

  it('on close, commits what is queued, waits for it and for a batch that has left, and refuses what comes after', async () => {
    const committed: number[] = []
    const group = createGroupCommit<number, number>(async (batch) => {
      await new Promise((resolve) => setTimeout(resolve, 10))
      for (const pending of batch) {
        committed.push(pending.item)
        pending.resolve(pending.item)
      }
    })
    const before = [group.add(1), group.add(2)]
    await group.close()
    expect(committed).toEqual([1, 2])
    expect(await Promise.all(before)).toEqual([1, 2])
    // A batch that has already left, the queue empty: close still waits for its commit.
    const other = createGroupCommit<number, number>(async (batch) => {
      await new Promise((resolve) => setTimeout(resolve, 10))
      for (const pending of batch) pending.resolve(pending.item)
      committed.push(-1)
    })
    const leaving = other.add(4)
    await new Promise((resolve) => { setImmediate(resolve) })
    await other.close()
    expect(committed).toEqual([1, 2, -1])
    expect(await leaving).toBe(4)
    await expect(group.add(3)).rejects.toBeInstanceOf(StoreUnavailableError)
  })
})
