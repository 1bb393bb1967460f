import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createFailureLog, summarizeCause } from '../../src/observability/failure-log.js'

function recorder () {
  const lines: { level: 'warn' | 'info', fields: Record<string, unknown>, message: string }[] = []
  return {
    lines,
    log: {
      warn: (fields: object, message: string) => { lines.push({ level: 'warn', fields: fields as Record<string, unknown>, message }) },
      info: (fields: object, message: string) => { lines.push({ level: 'info', fields: fields as Record<string, unknown>, message }) }
    }
  }
}

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })

describe('createFailureLog', () => {
  beforeEach(() => { vi.useFakeTimers() })
  afterEach(() => { vi.useRealTimers() })

  it('logs the first failure at once, then at most one line per second per kind with the count since the last line', () => {
    const { lines, log } = recorder()
    const failures = createFailureLog({ log, subject: 'store' })
    failures.failed('refused', 'insert', refused)
    expect(lines).toEqual([{
      level: 'warn',
      message: 'store failing (refused, insert)',
      fields: {
        subject: 'store',
        failure: 'refused',
        during: 'insert',
        failures: 1,
        cause: { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' }
      }
    }])
    for (let i = 0; i < 500; i++) failures.failed('refused', 'insert', refused)
    vi.advanceTimersByTime(999)
    expect(lines).toHaveLength(1)
    vi.advanceTimersByTime(1)
    // Written with the next failure, counted with the ones held back.
    failures.failed('refused', 'insert', new Error('the latest cause'))
    expect(lines).toHaveLength(2)
    expect(lines[1]?.fields).toMatchObject({ failure: 'refused', failures: 501, cause: { message: 'the latest cause' } })
    failures.failed('refused', 'insert', refused)
    expect(lines).toHaveLength(2)
  })

  it('logs a failure at once when a whole interval has passed since the last line', () => {
    const { lines, log } = recorder()
    const failures = createFailureLog({ log, subject: 'store' })
    failures.failed('refused', 'insert', refused)
    vi.advanceTimersByTime(1000)
    failures.failed('refused', 'insert', refused)
    expect(lines.map((line) => line.fields.failures)).toEqual([1, 1])
  })

  it('appends the effect to the failure lines\' message, and logs a failure with no cause without a cause field', () => {
    const { lines, log } = recorder()
    const failures = createFailureLog({ log, subject: 'rate limit store (Redis)', effect: 'requests are served without a limit' })
    failures.failed('timeout', 'incr', undefined)
    // As pino writes it: a field whose value is undefined is left out.
    expect(Object.keys(JSON.parse(JSON.stringify(lines[0]?.fields)) as object)).toEqual(['subject', 'failure', 'during', 'failures'])
    expect(lines).toEqual([{
      level: 'warn',
      message: 'rate limit store (Redis) failing (timeout, incr): requests are served without a limit',
      fields: { subject: 'rate limit store (Redis)', failure: 'timeout', during: 'incr', failures: 1 }
    }])
    failures.recovered()
    expect(lines[1]).toEqual({
      level: 'info',
      message: 'rate limit store (Redis) back',
      fields: {
        subject: 'rate limit store (Redis)',
        failedMs: 0,
        failures: 1
      }
    })
  })

  it('keeps kinds apart: a timeout is logged even while refusals are being counted', () => {
    const { lines, log } = recorder()
    const failures = createFailureLog({ log, subject: 'store' })
    failures.failed('refused', 'insert', refused)
    failures.failed('refused', 'insert', refused)
    failures.failed('timeout', 'insert', new Error('canceling statement due to statement timeout'))
    failures.failed('refused', 'readyz', refused)
    expect(lines.map((line) => [line.fields.failure, line.fields.during, line.fields.failures])).toEqual([
      ['refused', 'insert', 1], ['timeout', 'insert', 1], ['refused', 'readyz', 1]
    ])
  })

  it('writes one line when it works again, with the outage total, and none for later successes', () => {
    const { lines, log } = recorder()
    const failures = createFailureLog({ log, subject: 'store' })
    failures.recovered()
    expect(lines).toEqual([])
    for (let i = 0; i < 2; i++) failures.failed('refused', 'insert', refused)
    vi.advanceTimersByTime(100)
    failures.failed('refused', 'insert', refused)
    vi.advanceTimersByTime(150)
    failures.recovered()
    failures.recovered()
    expect(lines.map((line) => line.level)).toEqual(['warn', 'info'])
    // The outage is counted from its first failure, not its latest.
    expect(lines[1]).toEqual({ level: 'info', message: 'store back', fields: { subject: 'store', failedMs: 250, failures: 3 } })
    // A new outage is logged from its first failure again.
    failures.failed('refused', 'insert', refused)
    expect(lines).toHaveLength(3)
  })

  it('logs the first failure of a new outage at once, even within the interval of the last outage\'s line', () => {
    const { lines, log } = recorder()
    const failures = createFailureLog({ log, subject: 'store' })
    failures.failed('refused', 'insert', refused)
    vi.advanceTimersByTime(100)
    failures.recovered()
    vi.advanceTimersByTime(100)
    failures.failed('refused', 'insert', refused)
    expect(lines.map((line) => [line.level, line.fields.failures])).toEqual([['warn', 1], ['info', 1], ['warn', 1]])
  })
})

describe('summarizeCause', () => {
  it('keeps the innermost code and the first line of its message, never a stack', () => {
    const inner = Object.assign(new Error('first line\nsecond line'), { code: '57P01', detail: 'Key (id)=(5) secret' })
    const outer = new Error('the plant store is unavailable', { cause: new Error('wrapper', { cause: inner }) })
    expect(summarizeCause(outer)).toEqual({ code: '57P01', message: 'first line' })
  })

  it('shortens a message over 200 characters, and keeps one of 200 whole', () => {
    expect(summarizeCause(new Error('x', { cause: new Error('m'.repeat(500)) }))?.message).toBe(`${'m'.repeat(200)}…`)
    expect(summarizeCause(new Error('m'.repeat(200)))?.message).toBe('m'.repeat(200))
  })

  it('reads the first error of an AggregateError without a message (its code too, when the aggregate has none); one with a message is read itself', () => {
    const aggregate = Object.assign(new AggregateError([refused, new Error('other')], ''), { code: 'ECONNREFUSED' })
    expect(summarizeCause(aggregate)).toEqual({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' })
    expect(summarizeCause(new AggregateError([refused], ''))).toEqual({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' })
    expect(summarizeCause(new AggregateError([refused], 'all attempts failed'))).toEqual({ message: 'all attempts failed' })
    expect(summarizeCause(new AggregateError([], ''))).toEqual({ message: 'undefined' })
  })

  it('has no summary for no cause, and stops at a null cause', () => {
    expect(summarizeCause(undefined)).toBeUndefined()
    expect(summarizeCause(null)).toBeUndefined()
    expect(summarizeCause(Object.assign(new Error('outer'), { cause: null }))).toEqual({ message: 'outer' })
  })

  it('summarizes a thrown value that is not an Error as its text, and keeps a numeric code as text, no other kind', () => {
    expect(summarizeCause(new Error('outer', { cause: 'socket hang up\nat line 2' }))).toEqual({ message: 'socket hang up' })
    expect(summarizeCause(Object.assign(new Error('m'), { code: 42 }))).toEqual({ code: '42', message: 'm' })
    expect(summarizeCause(Object.assign(new Error('m'), { code: { nested: true } }))).toEqual({ message: 'm' })
  })

  it('follows at most 10 causes, so that a cyclic chain ends', () => {
    let error = new Error('level 0')
    for (let level = 1; level <= 12; level++) error = new Error(`level ${level}`, { cause: error })
    // From level 12, ten steps down.
    expect(summarizeCause(error)).toEqual({ message: 'level 2' })
    const cyclic: Error & { cause?: unknown } = new Error('a')
    cyclic.cause = new Error('b', { cause: cyclic })
    expect(summarizeCause(cyclic)).toEqual({ message: 'a' })
  })
})
