import { isUtf8 } from 'node:buffer'
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib'
import { errorCodes } from 'fastify'
import fp from 'fastify-plugin'
import secureJson from 'secure-json-parse'
import { InvalidBodyError, UnsupportedEncodingError } from '../errors.js'
import { plantId } from '../schemas.js'

// RFC 9110 §8.4.1: `deflate` is the zlib format, `x-gzip` is gzip.
const DECODERS = new Map([['gzip', gunzipSync], ['x-gzip', gunzipSync], ['deflate', inflateSync],
  ['br', brotliDecompressSync]])
const ACCEPTED = 'gzip, deflate, br'
const ACCEPT_ENCODING = { 'accept-encoding': ACCEPTED }
// Extras are ignored, so prototype-poisoning keys are dropped rather than refused.
const POISON = { protoAction: 'remove', constructorAction: 'remove' } as const
// Only these literals can differ from the double JSON.parse makes: without one, the parse is exact as it is.
const LONG_OR_DECIMAL_NUMBER = /\d{16}|\d[.eE]/
// After the one "id" key of a text JSON.parse took: the colon, the literal's integer part, and a fraction or exponent.
const ID_VALUE = /\s*:\s*(-?\d+)([.eE]?)/y
const NUMBER = /(-?\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?/

/** The body before its one Content-Encoding (or identity), its output capped at `limit`: a bomb is a 413. */
function decode (body: Buffer, header: string, limit: number): Buffer {
  const coding = header.trim().toLowerCase()
  if (coding === '' || coding === 'identity') return body
  const decoder = DECODERS.get(coding)
  if (decoder === undefined) {
    throw Object.assign(new UnsupportedEncodingError(coding.slice(0, 100), ACCEPTED), { headers: ACCEPT_ENCODING })
  }
  try {
    return decoder(body, { maxOutputLength: limit })
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE()
    throw new InvalidBodyError(`${coding.replace('x-', '')} data`)
  }
}

/**
 * The reviver that reads an `id` number from its source text, which Node 22+ hands a reviver (TC39 JSON.parse
 * source text access): the integer the literal denotes exactly, or NaN past 2^63 or for a fraction (the schema
 * refuses NaN, and a bigint beyond int64).
 */
function exactId (key: string, value: unknown, { source }: { source?: string } = {}): unknown {
  if (key !== 'id' || typeof value !== 'number') return value
  // Every JSON number literal matches NUMBER: there is no null to handle.
  const [, whole, fraction = '', exponent = ''] = NUMBER.exec(String(source)) as RegExpExecArray
  const digits = BigInt(`${whole}${fraction}`)
  if (digits === 0n) return 0
  // A non-zero integer is at least 1 as a double: this bounds the powers of ten to the text's length.
  if (!(Math.abs(value) >= 1 && Math.abs(value) <= 2 ** 63)) return Number.NaN
  const shift = Number(exponent) - fraction.length
  const down = 10n ** BigInt(Math.max(-shift, 0))
  const id = digits * 10n ** BigInt(Math.max(shift, 0)) / down
  return digits % down === 0n ? plantId(id) : Number.NaN
}

/** A body's JSON value, exact int64 ids; strict UTF-8 (RFC 8259 §8.1): toString's U+FFFD for a bad byte is 400. */
export function parseBody (body: Buffer, coding: string | undefined, limit: number): unknown {
  const bytes = coding === undefined ? body : decode(body, coding, limit)
  const text = bytes.toString()
  if (text.includes('\uFFFD') && !isUtf8(bytes)) throw new InvalidBodyError('UTF-8')
  try {
    const value = secureJson.parse(text, undefined, POISON)
    if (typeof value?.id !== 'number') return value
    // A reviver costs about 20 times the parse and overflows V8's stack at about 2,300 levels of nesting: so the
    // literal is read from the text when surely the id's. With no backslash (no escaped key, no quote in a string),
    // an `"id"` found once is the top-level key, and its literal follows it.
    const at = text.indexOf('"id"')
    if (text.includes('\\') || text.includes('"id"', at + 4)) {
      return LONG_OR_DECIMAL_NUMBER.test(text) ? secureJson.parse(text, exactId, POISON) : value
    }
    ID_VALUE.lastIndex = at + 4
    const [, integer, decimal] = ID_VALUE.exec(text) as RegExpExecArray & [string, string, string]
    if (decimal !== '') return secureJson.parse(text, exactId, POISON)
    // Past 2^63 the schema refuses it as NaN: BigInt would take 165 ms for a million digits.
    value.id = Math.abs(value.id) > 2 ** 63 ? Number.NaN : plantId(BigInt(integer))
    return value
  } catch {
    throw new InvalidBodyError('JSON')
  }
}

export const jsonBody = fp<{ bodyLimit: number }>(async function jsonBody (app, { bodyLimit }) {
  // JSON only: Fastify's text/plain parser goes too, so any other type is a 415.
  app.removeAllContentTypeParsers()
  // Fastify hands what the parser throws to `done` itself. No route changes bodyLimit (BODY_LIMIT), the decoding cap.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    done(null, parseBody(body as Buffer, request.headers['content-encoding'], bodyLimit))
  })
})
