import createError from '@fastify/error'
import { STATUS_CODES, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

// Named errors that carry their status. The service and the plugins throw these; routes never map statuses.
export const InvalidJsonError = createError('PLANTS_INVALID_JSON', 'body is not valid JSON', 400)
export const InvalidUtf8Error = createError('PLANTS_INVALID_UTF8', 'body is not valid UTF-8', 400)
export const InvalidEncodedBodyError = createError('PLANTS_INVALID_ENCODED_BODY', 'body is not valid %s data', 400)
export const DecodedBodyTooLargeError = createError('PLANTS_DECODED_BODY_TOO_LARGE',
  'body must not be larger than %s bytes once decoded', 413)
export const UnsupportedEncodingError = createError('PLANTS_UNSUPPORTED_ENCODING',
  'content-encoding "%s" is not supported: send the body with one of %s, or with none', 415)
export const MissingTokenError = createError('PLANTS_MISSING_TOKEN',
  'a bearer token is required: send "Authorization: Bearer <token>"', 401)
export const InvalidTokenError = createError('PLANTS_INVALID_TOKEN', 'the bearer token is not valid', 401)
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
export const MethodNotAllowedError = createError('PLANTS_METHOD_NOT_ALLOWED',
  '%s is not allowed on %s; allowed: %s', 405)
export const MissingHostError = createError('PLANTS_MISSING_HOST', 'an HTTP/1.1 request must carry a Host header', 400)
export const ExpectationFailedError = createError('PLANTS_EXPECTATION_FAILED',
  'the expectation "%s" cannot be met: send no Expect header, or Expect: 100-continue', 417)
export const DuplicateHostError = createError('PLANTS_DUPLICATE_HOST',
  'the request carries %s Host headers: send exactly one', 400)
export const InvalidHostError = createError('PLANTS_INVALID_HOST',
  'the Host header "%s" is not a valid host[:port]', 400)
export const ConnectRefusedError = createError('PLANTS_CONNECT_REFUSED',
  'CONNECT is not supported: this service is not a proxy', 400)
export const VersionNotSupportedError = createError('PLANTS_VERSION_NOT_SUPPORTED',
  '%s is not supported: send HTTP/1.1', 505)
export const DuplicateAuthorizationError = createError('PLANTS_DUPLICATE_AUTHORIZATION',
  'the request carries %s Authorization headers: send exactly one', 400)

/** A store's named failure (plants/plant-repository.ts): the one list of them. */
export function isStoreError (error: unknown): boolean {
  return error instanceof StoreUnavailableError || error instanceof StoreOutcomeUnknownError ||
    error instanceof StoreFullError || error instanceof WritesFailingError
}

/** Messages for Fastify's own 4xx errors, written for the people who call this API. */
const frameworkMessages: Record<string, (request: FastifyRequest) => string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (request) => `body must not be larger than ${request.routeOptions.bodyLimit} bytes`,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => 'content-type must be application/json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => 'body length does not match the content-length header',
  FST_ERR_BAD_URL: () => 'the URL is not valid'
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
export function sendError (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const given = error.statusCode ?? 500
  const status = given >= 400 && given <= 599 ? given : 500
  const headers = (error as { headers?: Record<string, string> }).headers
  if (headers !== undefined) reply.headers(headers)
  let message = error.message
  if (status < 500) message = frameworkMessages[error.code]?.(request) ?? message
  else if (status === 500) {
    request.log.error({ err: error }, 'request failed')
    message = 'internal server error'
  } else {
    // Refusals logged once per interval elsewhere (under-pressure.ts, the store's wrapper), or not worth a
    // warning each (a 505 is the client's doing).
    const quiet = error instanceof VersionNotSupportedError || error instanceof OverloadedError ||
      error instanceof NotReadyError || isStoreError(error)
    if (!quiet) request.log.warn({ err: error }, 'request refused')
    if (error.code?.startsWith('PLANTS_') !== true) message = STATUS_CODES[status] ?? 'server error'
    // What a 503 tells a client to wait before it retries, unless the error set its own.
    if (status === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', '1')
  }
  if (status === 401) {
    const invalid = error instanceof InvalidTokenError ? ', error="invalid_token"' : ''
    reply.header('www-authenticate', `Bearer realm="plants"${invalid}`)
  }
  // Fastify clears the content-type before an error handler, and types an object as JSON in UTF-8.
  reply.code(status).send({ error: status, message })
}

/**
 * Installs the one error shape on every path an error takes out of Fastify. `send` is sendError, or
 * sendError behind what adds the CORS headers (plugins/http-edge.ts).
 */
export function installErrorHandlers (app: FastifyInstance, send: typeof sendError = sendError): void {
  app.setErrorHandler(send)
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ error: 404, message: `no route for ${request.method} ${pathOf(request.url).slice(0, 200)}` })
  })
}

/** The parser's errors that are not a 400 (HPE_PAUSED_H2_UPGRADE: HTTP/2's cleartext preface). */
const CLIENT_ERRORS = new Map<string | undefined, [status: number, message: string]>([
  ['HPE_HEADER_OVERFLOW', [431, 'request headers are too large']],
  ['ERR_HTTP_REQUEST_TIMEOUT', [408, 'the request took too long to arrive']],
  ['HPE_PAUSED_H2_UPGRADE', [505, 'the HTTP version is not supported: send HTTP/1.1']]
])

/** A request line with a well-formed version (`HTTP/` digit `.` digit, RFC 9112 §2.3). */
const REQUEST_LINE_VERSION = /^[^\r\n ]+ [^\r\n ]+ HTTP\/\d\.\d\r?\n/

type ParserError = Error & { code?: string, rawPacket?: unknown }

/** Whether the parser refused a well-formed version such as HTTP/1.2 (a 505), not a garbled one (a 400). */
function versionRefused (error: ParserError): boolean {
  return error.code === 'HPE_INVALID_VERSION' && Buffer.isBuffer(error.rawPacket) &&
    REQUEST_LINE_VERSION.test(error.rawPacket.toString('latin1'))
}

/** An Error record with its headers, for a reply that Fastify does not send (malformed HTTP, CONNECT, metrics). */
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

/** An Error record as the bytes of a whole HTTP/1.1 reply, for a socket no Fastify reply owns; then it closes. */
export function rawErrorReply (status: number, message: string, requestId?: string): string {
  const { body, headers } = bareError(status, message)
  const fields = { ...requestId === undefined ? {} : { 'X-Request-Id': requestId }, ...headers, Connection: 'close' }
  const lines = Object.entries(fields).map(([name, value]) => `${name}: ${value}`)
  return [`HTTP/1.1 ${status} ${STATUS_CODES[status]}`, ...lines, '', body].join('\r\n')
}

/**
 * Malformed HTTP never reaches Fastify: Node hands the socket here. Answers with an Error record
 * when the socket can take one, and returns its status; `answered` hears it once the reply is
 * written in full, never for a client that is gone. Bad bytes behind a request still being answered
 * (`inFlight`, pipelined) are answered after it, or its reply, which may have stored a plant, would
 * be cut off.
 */
export function clientErrorHandler (error: ParserError, socket: Socket, inFlight?: ServerResponse,
  answered?: (status: number) => void): number | undefined {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return undefined
  }
  if (error.code === 'HPE_CLOSED_CONNECTION') {
    if (inFlight === undefined) socket.destroy()
    return undefined
  }
  const [status, message] = CLIENT_ERRORS.get(versionRefused(error) ? 'HPE_PAUSED_H2_UPGRADE' : error.code) ??
    [400, 'the request is not valid HTTP']
  const reply = rawErrorReply(status, message)
  const answer = () => {
    if (socket.writable) socket.end(reply, (failed?: Error | null) => { if (failed == null) answered?.(status) })
    else socket.destroy()
  }
  if (inFlight === undefined) answer()
  else {
    // Once, when the reply in flight finishes or closes (a reply that fails never finishes).
    const then = () => {
      inFlight.off('finish', then).off('close', then)
      answer()
    }
    inFlight.once('finish', then).once('close', then)
  }
  return status
}
