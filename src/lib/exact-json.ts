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
  // Stryker disable next-line EqualityOperator: one step past the end reads NaN, which is no digit and ends nothing early
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
  // Stryker disable next-line ConditionalExpression: a fast path only; a text it passes over has only integers below 16 digits, which JSON.parse read exactly (-0 would become 0, the same id)
  if (maybeInexact(text)) {
    // Found only in a top-level object: no other JSON text has a member name at depth 1.
    const literal = lastTopLevelNumber(text, 'id')
    if (literal !== undefined) (value as Record<string, unknown>).id = exactInteger(literal)
  }
  return value
}

/** The exact value of a JSON number literal as a PlantId, or NaN when it is not an int64. */
export function exactInteger (literal: string): PlantId {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal)
  if (match === null) return Number.NaN
  const [, sign, whole, fraction = '', exponent] = match
  const significant = (whole + fraction).replace(/^0+/, '')
  if (significant === '') return 0
  // The value is digits × 10^scale, digits without trailing zeros: an integer when scale >= 0.
  const digits = significant.replace(/0+$/, '')
  const scale = Number(exponent ?? 0) - fraction.length + significant.length - digits.length
  if (scale < 0 || digits.length + scale > 19) return Number.NaN
  const value = BigInt(sign + digits + '0'.repeat(scale))
  if (value < INT64_MIN || value > INT64_MAX) return Number.NaN
  return value <= SAFE_MAX && value >= -SAFE_MAX ? Number(value) : value
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
/** What follows a member's name: the colon, with any white space around it. */
const NAME_END = /\s*:\s*/y
const NUMBER = /-?[\d.eE+-]+/y

/**
 * The source text of the last number written as the value of `key` in the top-level object of a
 * JSON text that JSON.parse has accepted (so the text is well-formed and the walk can be simple).
 * A member's name is a string at depth 1 followed by a colon; a string value is followed by a comma
 * or a bracket, and an array's items have no names: so none is found outside a top-level object.
 */
function lastTopLevelNumber (text: string, key: string): string | undefined {
  let depth = 0
  let found: string | undefined
  // Stryker disable next-line EqualityOperator: one step past the end reads NaN, which no branch takes
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      let end = i + 1
      while (text.charCodeAt(end) !== QUOTE) end += text.charCodeAt(end) === BACKSLASH ? 2 : 1
      NAME_END.lastIndex = end + 1
      if (depth === 1 && NAME_END.test(text) && JSON.parse(text.slice(i, end + 1)) === key) {
        NUMBER.lastIndex = NAME_END.lastIndex
        found = NUMBER.exec(text)?.[0]
      }
      i = end
    } else if (c === 0x7b || c === 0x5b) { // { [
      depth++
    } else if (c === 0x7d || c === 0x5d) { // } ]
      depth--
    }
  }
  return found
}
