import { isUtf8 } from 'node:buffer'
import { brotliDecompressSync, gunzipSync, inflateSync, type ZlibOptions } from 'node:zlib'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { DecodedBodyTooLargeError, InvalidEncodedBodyError, InvalidJsonError, InvalidUtf8Error, UnsupportedEncodingError } from '../errors.js'
import { parseJsonExact } from '../lib/exact-json.js'

/**
 * The content codings a request body may come in (RFC 9110 §8.4.1), names compared
 * case-insensitively; `x-gzip` is gzip (§8.4.1.3). `deflate` is the zlib format the RFC names, not
 * raw deflate. The synchronous decoders are bounded: the encoded body is at most BODY_LIMIT (Fastify
 * counts it as it arrives) and so is the decoded one (maxOutputLength), so at most about 1 MiB of
 * output per request, a few milliseconds at worst.
 */
const DECODERS = new Map<string, (bytes: Buffer, options: ZlibOptions) => Buffer>([
  ['gzip', gunzipSync],
  ['x-gzip', gunzipSync],
  ['deflate', inflateSync],
  ['br', brotliDecompressSync]
])

/** The Accept-Encoding of a 415 for a content coding: what the service decodes (RFC 9110 §12.5.3). */
export const ACCEPTED_CODINGS = 'gzip, deflate, br'

const unsupported = (coding: string) => Object.assign(
  new UnsupportedEncodingError(coding.slice(0, 100), ACCEPTED_CODINGS),
  { headers: { 'accept-encoding': ACCEPTED_CODINGS } }
)

/**
 * The body as the client wrote it, before the `Content-Encoding` it declares. `identity` (and an
 * empty list) changes nothing; one other coding is decoded; a coding not in DECODERS, or more
 * than one, is a 415 that lists what is accepted: never a body stored as if it were plain. The
 * decoder stops as soon as its output passes `limit` (a 10 MB run of zeros gzipped is 10 kB: it
 * must cost no more than `limit`), which is a 413; data that is not valid for its coding is a 400.
 */
export function decodeBody (bytes: Buffer, header: string, limit: number): Buffer {
  const codings = header.split(',').map((coding) => coding.trim().toLowerCase()).filter((coding) => coding !== '' && coding !== 'identity')
  if (codings.length === 0) return bytes
  // Stacked codings (gzip of gzip) are refused: each layer could be BODY_LIMIT again.
  if (codings.length > 1) throw unsupported(header.trim())
  const coding = codings[0] as string
  const decode = DECODERS.get(coding)
  if (decode === undefined) throw unsupported(coding)
  try {
    return decode(bytes, { maxOutputLength: limit })
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw new DecodedBodyTooLargeError(limit)
    throw new InvalidEncodedBodyError(coding === 'x-gzip' ? 'gzip' : coding)
  }
}

/**
 * Replaces Fastify's JSON parser with one that keeps int64 ids exact (JSON.parse rounds beyond
 * 2^53) and drops prototype-poisoning keys (`__proto__`, `constructor.prototype`): like any other
 * property NewPlant does not name, they are accepted and ignored, as the document says. The body is read as bytes, decoded when it has
 * a content coding (decodeBody), and must be valid UTF-8 (RFC 8259 §8.1): decoding it leniently
 * would turn bad bytes into U+FFFD and store a name the client never sent.
 */
export const jsonBody = fp(async function jsonBody (app: FastifyInstance) {
  // JSON only: Fastify's text/plain parser goes too, so any other type is a 415.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let bytes = body as Buffer
    // The common case, no coding, costs this one header lookup (no hook, no stream).
    const coding = request.headers['content-encoding']
    if (coding !== undefined) {
      try {
        bytes = decodeBody(bytes, coding, request.routeOptions.bodyLimit)
      } catch (error) {
        done(error as Error, undefined)
        return
      }
    }
    if (!isUtf8(bytes)) {
      done(new InvalidUtf8Error(), undefined)
      return
    }
    try {
      done(null, parseJsonExact(bytes.toString('utf8')))
    } catch {
      done(new InvalidJsonError(), undefined)
    }
  })
}, { name: 'json-body' })
