import secureJson from 'secure-json-parse'
import { INT64_MAX, INT64_MIN, type PlantId } from '../schemas.js'

const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER)

/**
 * Whether the text may hold a number literal that JSON.parse changed: 16 or more digits in a row,
 * or a digit followed by a fraction or an exponent. Strings can match too (a name "v1.2"); that
 * only costs the slow path. The same test as /\d{16}|\d[.eE]/, in one pass: the regular
 * expression tried both alternatives at every character, 150 ns for a typical body against 40.
 */
export function maybeInexact (text: string): boolean {
  let digits = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 0x30 && c <= 0x39) { // 0-9
      if (++digits === 16) return true
    } else if (digits > 0 && (c === 0x2e || c === 0x65 || c === 0x45)) { // . e E
      return true
    } else {
      digits = 0
    }
  }
  return false
}

/**
 * Parses a JSON text like Fastify's default parser with `onProtoPoisoning` and
 * `onConstructorPoisoning` set to `'remove'` (secure-json-parse: `__proto__` and
 * `constructor.prototype` keys are dropped, at any depth, so they never reach an object; the last of
 * duplicate keys wins) and keeps the top-level
 * `id` exact: a safe integer stays a number, a larger integer becomes a bigint, and a number literal
 * that is not an integer or is beyond int64 becomes NaN, which the schema rejects.
 */
export function parseJsonExact (text: string): unknown {
  const value: unknown = secureJson.parse(text, undefined, { protoAction: 'remove', constructorAction: 'remove' })
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && maybeInexact(text)) {
    const literal = lastTopLevelNumber(text, 'id')
    if (literal !== undefined) (value as Record<string, unknown>).id = exactInteger(literal)
  }
  return value
}

/** The exact value of a JSON number literal as a PlantId, or NaN when it is not an int64. */
export function exactInteger (literal: string): PlantId {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal)
  if (match === null) return Number.NaN
  const [, sign, whole, fraction = '', exponent = '0'] = match
  let digits = (whole + fraction).replace(/^0+/, '')
  let scale = Number(exponent) - fraction.length
  if (digits === '') return 0
  while (scale < 0 && digits.endsWith('0')) {
    digits = digits.slice(0, -1)
    scale++
  }
  if (scale < 0 || digits.length + scale > 19) return Number.NaN
  const value = BigInt(sign + digits + '0'.repeat(scale))
  if (value < INT64_MIN || value > INT64_MAX) return Number.NaN
  return value <= SAFE_MAX && value >= -SAFE_MAX ? Number(value) : value
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const NUMBER = /-?[\d.eE+-]+/y

/**
 * The source text of the last number written as the value of `key` in the top-level object of a
 * JSON text that JSON.parse has accepted (so the text is well-formed and the walk can be simple).
 */
function lastTopLevelNumber (text: string, key: string): string | undefined {
  let depth = 0
  let expectKey = false
  let found: string | undefined
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      let end = i + 1
      while (text.charCodeAt(end) !== QUOTE) end += text.charCodeAt(end) === BACKSLASH ? 2 : 1
      if (depth === 1 && expectKey) {
        expectKey = false
        const name: unknown = JSON.parse(text.slice(i, end + 1))
        let v = text.indexOf(':', end + 1) + 1
        while (/\s/.test(text[v] ?? '')) v++
        if (name === key) {
          NUMBER.lastIndex = v
          found = NUMBER.exec(text)?.[0]
        }
        i = v - 1
      } else {
        i = end
      }
    } else if (c === 0x7b || c === 0x5b) { // { [
      depth++
      expectKey = depth === 1
    } else if (c === 0x7d || c === 0x5d) { // } ]
      depth--
    } else if (c === 0x2c && depth === 1) { // ,
      expectKey = true
    }
  }
  return found
}
