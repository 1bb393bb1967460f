import { describe, expect, it } from 'vitest'
import { parseTraceparent } from '../../src/observability/trace-context.js'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const SPAN = '00f067aa0ba902b7'

describe('parseTraceparent (W3C Trace Context)', () => {
  it('reads the trace id and parent span id of a valid version 00 header, sampled or not', () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, parentSpanId: SPAN })
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)).toEqual({ traceId: TRACE, parentSpanId: SPAN })
  })

  it('accepts a later version with more fields after a dash, as the specification asks', () => {
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-future`)).toEqual({ traceId: TRACE, parentSpanId: SPAN })
  })

  const invalid: [string, string | string[] | undefined][] = [
    ['no header', undefined],
    ['an empty header', ''],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with more fields', `00-${TRACE}-${SPAN}-01-x`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['a missing flags field', `00-${TRACE}-${SPAN}`],
    ['surrounding blanks', ` 00-${TRACE}-${SPAN}-01`],
    ['two headers joined by a comma', `00-${TRACE}-${SPAN}-01, 00-${TRACE}-${SPAN}-01`],
    ['an array', [`00-${TRACE}-${SPAN}-01`]],
    ['a very long header', `01-${TRACE}-${SPAN}-01-${'a'.repeat(1000)}`]
  ]
  for (const [what, header] of invalid) {
    it(`ignores ${what}`, () => {
      expect(parseTraceparent(header)).toBeUndefined()
    })
  }
})
