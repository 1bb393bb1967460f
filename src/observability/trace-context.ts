/** `version-traceid-parentid-flags`, lowercase hex; ids of all zeros are invalid. */
const TRACEPARENT = /^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}(?:-.*)?$/

/** The trace and the caller's span from a W3C `traceparent` (https://www.w3.org/TR/trace-context/), else undefined.
 * Version ff is invalid, version 00 ends at the flags, a later version may add `-` fields. */
export function parseTraceparent (header: string | string[] | undefined) {
  if (typeof header !== 'string' || header.length > 512 || !TRACEPARENT.test(header)) return undefined
  if (header.startsWith('ff') || (header.startsWith('00') && header.length !== 55)) return undefined
  return { traceId: header.slice(3, 35), parentSpanId: header.slice(36, 52) }
}
