/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/), the `traceparent` header:
 * `version-traceid-parentid-flags`, lowercase hex, e.g.
 * `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`.
 */
export interface TraceParent {
  /** 32 hex digits: the trace this request belongs to. */
  traceId: string
  /** 16 hex digits: the caller's span, the parent of this request's work. */
  parentSpanId: string
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-.*)?$/
const ZERO_TRACE = '00000000000000000000000000000000'
const ZERO_SPAN = '0000000000000000'

/**
 * The trace id and parent span id of a valid header, else undefined: a missing or malformed header
 * is ignored, never an error. Per the specification: version ff is invalid, all-zero ids are
 * invalid, version 00 has nothing after the flags, and a later version may add fields after a dash.
 */
export function parseTraceparent (header: string | string[] | undefined): TraceParent | undefined {
  if (typeof header !== 'string' || header.length > 512) return undefined
  const match = TRACEPARENT.exec(header)
  if (match === null) return undefined
  const [, version, traceId, parentSpanId, rest] = match as unknown as [string, string, string, string, string | undefined]
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined
  if (traceId === ZERO_TRACE || parentSpanId === ZERO_SPAN) return undefined
  return { traceId, parentSpanId }
}
