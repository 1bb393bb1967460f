import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ForbiddenKeyError, InvalidJsonError } from '../errors.js'
import { parseJsonExact } from '../lib/exact-json.js'

/**
 * Replaces Fastify's JSON parser with one that keeps int64 ids exact (JSON.parse rounds beyond
 * 2^53) and still refuses prototype-poisoning keys.
 */
export const jsonBody = fp(async function jsonBody (app: FastifyInstance) {
  // JSON only: Fastify's text/plain parser goes too, so any other type is a 415.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, text, done) => {
    try {
      done(null, parseJsonExact(text as string))
    } catch (error) {
      done((error as Error).message.includes('forbidden prototype property') ? new ForbiddenKeyError() : new InvalidJsonError(), undefined)
    }
  })
}, { name: 'json-body' })
