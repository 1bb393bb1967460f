import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import {
  ExpectationFailedError, MethodNotAllowedError, MissingHostError, pathOf, RouteNotFoundError
} from '../errors.js'

/** The methods /plants answers; any other method on it is a 405 that names them. */
export const PLANTS_ALLOW = 'POST'

/** A caller's request id is kept when it is short printable ASCII; otherwise one is made. */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/
/** This process's random prefix and a sequence number: unique per process, and cheaper than a UUID. */
const ID_PREFIX = `${randomBytes(8).toString('hex')}-`
let sequence = 0

export function requestId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : ID_PREFIX + (++sequence).toString(36)
}

/**
 * What Node would answer with a bare reply, and what no route answers, get the Error record here,
 * in the first hook of every request, before a token or a body is read.
 */
function refusal (request: FastifyRequest, reply: FastifyReply) {
  // Node's own check (requireHostHeader, off in app.ts) answers with no body and no hook.
  if (request.headers.host === undefined && request.raw.httpVersion === '1.1') return new MissingHostError()
  if (request.is404) {
    const path = pathOf(request.url).slice(0, 200)
    if (path !== '/plants') return new RouteNotFoundError(request.method, path)
    reply.header('allow', PLANTS_ALLOW)
    return new MethodNotAllowedError(request.method, path, PLANTS_ALLOW)
  }
  const expect = request.headers.expect
  if (expect !== undefined && expect.toLowerCase() !== '100-continue') {
    return new ExpectationFailedError(expect.slice(0, 100))
  }
}

/** Every reply carries its request id, no content sniffing and no caching (replies answer writes). */
export function setReplyHeaders (request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id)
  reply.header('x-content-type-options', 'nosniff')
  reply.header('cache-control', 'no-store')
}

export const httpEdge = fp<{ corsOrigins?: readonly string[] | undefined }>(async function httpEdge (app, options) {
  // Without a listener Node answers an Expect other than 100-continue with a bare 417 before any hook.
  app.server.on('checkExpectation', app.routing)
  app.addHook('onRequest', (request, reply, done) => {
    setReplyHeaders(request, reply)
    done()
  })
  // CORS_ORIGINS (exact origins, or `*` alone), between the two hooks: a preflight's 204 carries the headers above,
  // and every refusal the CORS headers. No credentials mode: a page sends the token in Authorization itself.
  if (options.corsOrigins !== undefined) {
    await app.register((await import('@fastify/cors')).default, {
      origin: [...options.corsOrigins],
      methods: PLANTS_ALLOW,
      allowedHeaders: 'authorization, content-type, content-encoding, x-request-id',
      // So that a page can read every Error record's context.
      exposedHeaders: 'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, ' +
        'www-authenticate, allow, accept-encoding',
      maxAge: 600,
      // An OPTIONS without Access-Control-Request-Method gets the same 204, not a plain-text 400.
      strictPreflight: false
    })
  }
  app.addHook('onRequest', (request, reply, done) => { done(refusal(request, reply)) })
}, { name: 'http-edge' })
