import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createFailureLog, summarizeCause } from '../../src/lib/failure-log.js'

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

  it('logs the first failure at once, then one line per second per kind with the count since the last line', () => {
    const { lines, log } = recorder()
    const failures = createFailureLog({ log, subject: 'store', counted: 'refused' })
    failures.failed('refused', 'insert', refused)
    expect(lines).toEqual([{ level: 'warn', message: 'store failing (refused, insert)', fields: { subject: 'store', failure: 'refused', during: 'insert', refused: 1, cause: { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' } } }])
    for (let i = 0; i < 500; i++) failures.failed('refused', 'insert', refused)
    expect(lines).toHaveLength(1)
    vi.advanceTimersByTime(1000)
    expect(lines).toHaveLength(2)
    expect(lines[1]?.fields).toMatchObject({ failure: 'refused', refused: 500 })
    // Nothing new: no line at the next second.
    vi.advanceTimersByTime(5000)
    expect(lines).toHaveLength(2)
  })

  it('keeps kinds apart: a timeout is logged even while refusals are being counted', () => {
    const { lines, log } = recorder()
    const failures = createFailureLog({ log, subject: 'store', counted: 'refused' })
    failures.failed('refused', 'insert', refused)
    failures.failed('refused', 'insert', refused)
    failures.failed('timeout', 'insert', new Error('canceling statement due to statement timeout'))
    failures.failed('refused', 'readyz', refused)
    expect(lines.map((line) => [line.fields.failure, line.fields.during, line.fields.refused])).toEqual([
      ['refused', 'insert', 1], ['timeout', 'insert', 1], ['refused', 'readyz', 1]
    ])
  })

  it('writes one line when it works again, with the outage total, and none for later successes', () => {
    const { lines, log } = recorder()
    const failures = createFailureLog({ log, subject: 'store', counted: 'refused' })
    failures.recovered()
    expect(lines).toEqual([])
    for (let i = 0; i < 3; i++) failures.failed('refused', 'insert', refused)
    expect(failures.failing).toBe(true)
    vi.advanceTimersByTime(250)
    failures.recovered()
    failures.recovered()
    expect(lines.map((line) => line.level)).toEqual(['warn', 'info'])
    expect(lines[1]).toEqual({ level: 'info', message: 'store back', fields: { subject: 'store', failedMs: 250, refused: 3 } })
    expect(failures.failing).toBe(false)
    // The counted refusals were part of the outage's total: no late line after the recovery.
    vi.advanceTimersByTime(2000)
    expect(lines).toHaveLength(2)
    // A new outage is logged from its first failure again.
    failures.failed('refused', 'insert', refused)
    expect(lines).toHaveLength(3)
  })
})

describe('summarizeCause', () => {
  it('keeps the innermost code and the first line of its message, never a stack', () => {
    const inner = Object.assign(new Error('first line\nsecond line'), { code: '57P01', detail: 'Key (id)=(5) secret' })
    const outer = new Error('the plant store is unavailable', { cause: new Error('wrapper', { cause: inner }) })
    expect(summarizeCause(outer)).toEqual({ code: '57P01', message: 'first line' })
  })

  it('shortens a long message and reads the first error of an AggregateError', () => {
    expect(summarizeCause(new Error('x', { cause: new Error('m'.repeat(500)) }))?.message).toHaveLength(201)
    const aggregate = Object.assign(new AggregateError([refused, new Error('other')], ''), { code: 'ECONNREFUSED' })
    expect(summarizeCause(aggregate)).toEqual({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' })
  })
})
