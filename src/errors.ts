import createError from '@fastify/error'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'

// Named errors that carry their status. The service and the plugins throw these; routes never map statuses.
/** 'JSON', 'UTF-8', or a content coding's data ('gzip data'). */
export const InvalidBodyError = createError('PLANTS_INVALID_BODY', 'body is not valid %s', 400)
export const DecodedBodyTooLargeError = createError('PLANTS_DECODED_BODY_TOO_LARGE',
  'body must not be larger than %s bytes once decoded', 413)
export const UnsupportedEncodingError = createError('PLANTS_UNSUPPORTED_ENCODING',
  'content-encoding "%s" is not supported: send the body with one of %s, or with none', 415)
export const PlantConflictError = createError('PLANTS_CONFLICT',
  'a plant with id %s already exists with another name or tag', 409)
export const StoreFullError = createError('PLANTS_STORE_FULL', 'the plant store is full', 507)
export const StoreUnavailableError = createError('PLANTS_STORE_UNAVAILABLE',
  'the plant store is unavailable, retry later', 503)
/** The write was sent but not confirmed: it may be stored or not; the same request is safe to send again. */
export const StoreOutcomeUnknownError = createError('PLANTS_STORE_OUTCOME_UNKNOWN',
  'the plant store did not confirm the write: the outcome is unknown; ' +
  'retrying the identical request is safe, it answers 200 if the plant was stored', 503)
/** /readyz while creates fail: reads may work (a synchronous standby gone), writes do not. */
export const WritesFailingError = createError('PLANTS_WRITES_FAILING',
  'the service is not ready: creates have failed for %s ms with no success', 503)
export const NotReadyError = createError('PLANTS_NOT_READY', 'the service is not ready', 503)
export const OverloadedError = createError('PLANTS_OVERLOADED', 'the service is overloaded, retry later', 503)
export const RateLimitedError = createError('PLANTS_RATE_LIMITED',
  'too many requests with this token: at most %s per minute, retry in %s s', 429)
export const RouteNotFoundError = createError('PLANTS_ROUTE_NOT_FOUND', 'no route for %s %s', 404)
export const MethodNotAllowedError = createError('PLANTS_METHOD_NOT_ALLOWED',
  '%s is not allowed on %s; allowed: %s', 405)
export const MissingHostError = createError('PLANTS_MISSING_HOST', 'an HTTP/1.1 request must carry a Host header', 400)
export const ExpectationFailedError = createError('PLANTS_EXPECTATION_FAILED',
  'the expectation "%s" cannot be met: send no Expect header, or Expect: 100-continue', 417)

/** A store's named failures (plants/plant-repository.ts): the one list of them. */
const STORE_ERRORS = [StoreUnavailableError, StoreOutcomeUnknownError, StoreFullError, WritesFailingError]
export const isStoreError = (error: unknown): boolean => STORE_ERRORS.some((StoreError) => error instanceof StoreError)

const MISSING_TOKEN = 'FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER'

/** Messages for the 4xx errors of Fastify and @fastify/bearer-auth, written for the people who call this API. */
const frameworkMessages: Record<string, (request: FastifyRequest) => string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (request) => `body must not be larger than ${request.routeOptions.bodyLimit} bytes`,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => 'content-type must be application/json',
  [MISSING_TOKEN]: () => 'a bearer token is required: send "Authorization: Bearer <token>"',
  FST_BEARER_AUTH_INVALID_AUTHORIZATION_HEADER: () => 'the bearer token is not valid'
}

/** The path of a request target, without its query. */
export function pathOf (url: string): string {
  const query = url.indexOf('?')
  return query === -1 ? url : url.slice(0, query)
}

/**
 * Turns any error into the Error record. 5xx details go to the log, never to the client. An error
 * may carry reply headers in `headers` (the http-errors convention), e.g. a 415's Accept-Encoding.
 */
export function sendError (error: FastifyError & { headers?: Record<string, string> }, request: FastifyRequest,
  reply: FastifyReply): void {
  const given = error.statusCode ?? 500
  const status = given >= 400 && given <= 599 ? given : 500
  if (error.headers !== undefined) reply.headers(error.headers)
  let message = error.message
  if (status < 500) message = frameworkMessages[error.code]?.(request) ?? message
  else if (status === 500) {
    request.log.error({ err: error }, 'request failed')
    message = 'internal server error'
  } else if (error.code?.startsWith('PLANTS_') !== true) {
    // Ours (shedding, not ready, store failures) are logged once per interval where they happen, not per request.
    request.log.warn({ err: error }, 'request refused')
    message = STATUS_CODES[status] ?? 'server error'
  }
  if (status === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', '1')
  const refused = error.code === MISSING_TOKEN ? '' : ', error="invalid_token"'
  if (status === 401) reply.header('www-authenticate', `Bearer realm="plants"${refused}`)
  // Fastify clears the content-type before an error handler, and types an object as JSON in UTF-8.
  reply.code(status).send({ error: status, message })
}

/** An Error record with its headers, for a reply that Fastify does not send (malformed HTTP, metrics). */
export function bareError (status: number, message: string) {
  const body = JSON.stringify({ error: status, message })
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff'
  }
  return { body, headers }
}

const CLIENT_ERRORS: Record<string, [status: number, message: string]> = {
  HPE_HEADER_OVERFLOW: [431, 'request headers are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'the request took too long to arrive']
}

/**
 * Malformed HTTP never reaches Fastify: Node hands the socket here (its `clientError` event). Bytes after a
 * request that said `Connection: close` are left to Node, which closes once that reply is written.
 */
export function clientErrorHandler (error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'HPE_CLOSED_CONNECTION') return
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const [status, message] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'the request is not valid HTTP']
  const { body, headers } = bareError(status, message)
  const fields = Object.entries({ ...headers, Connection: 'close' }).map(([name, value]) => `${name}: ${value}\r\n`)
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${fields.join('')}\r\n${body}`)
}
