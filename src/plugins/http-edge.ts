import { randomBytes } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest, FastifyServerOptions, LogController } from 'fastify'
import fp from 'fastify-plugin'
import { ExpectationFailedError, MethodNotAllowedError, MissingHostError, RouteNotFoundError } from '../errors.js'

/** The methods /plants answers; any other method on it is a 405 that names them. */
export const PLANTS_ALLOW = 'POST'

/** A caller's request id is kept when it is short printable ASCII; otherwise one is made. */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/
/** This process's random prefix and a sequence number: unique per process, and cheaper than a UUID. */
const ID_PREFIX = `${randomBytes(8).toString('hex')}-`
let sequence = 0

/**
 * What Node would answer with a bare reply, and what no route answers, get the Error record here,
 * in the first hook of every request, before a token or a body is read.
 */
function refusal (request: FastifyRequest, reply: FastifyReply) {
  // Node's own check (requireHostHeader, off in app.ts) answers with no body and no hook.
  if (request.headers.host === undefined && request.raw.httpVersion === '1.1') return new MissingHostError()
  if (request.is404) {
    const path = request.url.replace(/\?.*/s, '').slice(0, 200)
    if (path !== '/plants') return new RouteNotFoundError(request.method, path)
    reply.header('allow', PLANTS_ALLOW)
    return new MethodNotAllowedError(request.method, path, PLANTS_ALLOW)
  }
  const expect = request.headers.expect
  if (expect !== undefined && expect.toLowerCase() !== '100-continue') return new ExpectationFailedError()
}

/** On every reply, whoever writes it: no caching (replies answer writes) and no content sniffing. Lowercase, as
 * Fastify stores names: a name it must lowercase is a new string, looked up in V8's string table at every reply. */
const SAFE_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }

/** An onRequest hook: each reply carries its request id and SAFE_HEADERS. */
function setReplyHeaders (request: FastifyRequest, reply: FastifyReply, done = () => {}): void {
  reply.header('x-request-id', request.id).headers(SAFE_HEADERS)
  done()
}

export const httpEdge = fp<{ corsOrigins?: readonly string[] | undefined }>(async function httpEdge (app, options) {
  app.setErrorHandler(sendError)
  // Node answers an Expect other than 100-continue with a bare 417 unless the server has a listener for it:
  // routed like any request, it meets refusal() below and gets the Error record.
  app.server.on('checkExpectation', app.routing)
  app.addHook('onRequest', setReplyHeaders)
  // CORS_ORIGINS (exact origins, or `*` alone), between the two hooks: a preflight's 204 carries the headers above,
  // and every refusal the CORS headers. No credentials mode: a page sends the token in Authorization itself.
  if (options.corsOrigins !== undefined) {
    await app.register((await import('@fastify/cors')).default, {
      origin: [...options.corsOrigins],
      // So that a page can read every Error record's context.
      exposedHeaders: 'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, ' +
        'www-authenticate, allow, accept-encoding',
      maxAge: 600,
      // An OPTIONS without Access-Control-Request-Method gets the same 204, not a plain-text 400.
      strictPreflight: false
    })
  }
  app.addHook('onRequest', (request, reply, done) => { done(refusal(request, reply)) })
})

/**
 * The edge's part of Fastify's options: request ids, and the Error record for what never reaches a hook: a bad
 * URL (answered before routing, and logged here: Fastify waits for no completion) and malformed HTTP.
 */
export function edgeOptions (accessLog: LogController) {
  return {
    genReqId: (request) => {
      const given = request.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : ID_PREFIX + (++sequence).toString(36)
    },
    frameworkErrors: (error, request, reply) => {
      setReplyHeaders(request, reply)
      reply.raw.once('finish', () => { accessLog.requestCompleted(null, request, reply) })
      sendError(error, request, reply)
    },
    clientErrorHandler
  } satisfies FastifyServerOptions
}

/**
 * Turns any error into the Error record, in Fastify's and bearer-auth's words for theirs. 5xx details go to the
 * log, never to the client. An error may carry reply headers in `headers` (the http-errors convention).
 */
export function sendError (error: FastifyError & { headers?: Record<string, string> }, request: FastifyRequest,
  reply: FastifyReply): void {
  const given = error.statusCode ?? 500
  const status = given >= 400 && given <= 599 ? given : 500
  if (error.headers !== undefined) reply.headers(error.headers)
  // A 5xx of ours (shedding, not ready, store failures) is logged once per interval where it happens, not per request.
  const masked = status >= 500 && error.code?.startsWith('PLANTS_') !== true
  if (masked) request.log.error({ err: error }, 'request failed')
  if (status === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', '1')
  const refused = error.code === 'FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER' ? '' : ', error="invalid_token"'
  if (status === 401) reply.header('www-authenticate', `Bearer realm="plants"${refused}`)
  // Fastify clears the content-type before an error handler, and types an object as JSON in UTF-8.
  reply.code(status).send({ error: status, message: masked ? STATUS_CODES[status] ?? 'server error' : error.message })
}

/** An Error record with its headers, for a reply that Fastify does not send (malformed HTTP, metrics). */
export function errorRecordReply (status: number, message: string) {
  const body = JSON.stringify({ error: status, message })
  const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }
  return { body, headers: { ...headers, ...SAFE_HEADERS } }
}

/**
 * Malformed HTTP never reaches Fastify: Node hands the socket here (its `clientError` event), and its statuses and
 * words are kept. Bytes after a request that said `Connection: close` are left to Node, which closes after that reply.
 */
export function clientErrorHandler (error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'HPE_CLOSED_CONNECTION') return
  if (error.code === 'ECONNRESET' || !socket.writable) socket.destroy()
  else {
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
    const { body, headers } = errorRecordReply(status, String(STATUS_CODES[status]))
    const fields = Object.entries({ ...headers, connection: 'close' }).map(([name, value]) => `${name}: ${value}\r\n`)
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${fields.join('')}\r\n${body}`)
  }
}
