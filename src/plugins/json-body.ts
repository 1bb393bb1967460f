import { isUtf8 } from 'node:buffer'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ForbiddenKeyError, InvalidJsonError, InvalidUtf8Error } from '../errors.js'
import { parseJsonExact } from '../lib/exact-json.js'

/**
 * Replaces Fastify's JSON parser with one that keeps int64 ids exact (JSON.parse rounds beyond
 * 2^53) and still refuses prototype-poisoning keys. The body is read as bytes and must be valid
 * UTF-8 (RFC 8259 §8.1): decoding it leniently would turn bad bytes into U+FFFD and store a name
 * the client never sent.
 */
export const jsonBody = fp(async function jsonBody (app: FastifyInstance) {
  // JSON only: Fastify's text/plain parser goes too, so any other type is a 415.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    const bytes = body as Buffer
    if (!isUtf8(bytes)) {
      done(new InvalidUtf8Error(), undefined)
      return
    }
    try {
      done(null, parseJsonExact(bytes.toString('utf8')))
    } catch (error) {
      done((error as Error).message.includes('forbidden prototype property') ? new ForbiddenKeyError() : new InvalidJsonError(), undefined)
    }
  })
}, { name: 'json-body' })
