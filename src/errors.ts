import createError from '@fastify/error'
import { STATUS_CODES, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ErrorRecord } from './schemas.js'

// Named errors that carry their status. The service and the plugins throw these; routes never map statuses.
export const InvalidJsonError = createError('PLANTS_INVALID_JSON', 'body is not valid JSON', 400)
export const InvalidUtf8Error = createError('PLANTS_INVALID_UTF8', 'body is not valid UTF-8', 400)
export const InvalidEncodedBodyError = createError('PLANTS_INVALID_ENCODED_BODY', 'body is not valid %s data', 400)
export const DecodedBodyTooLargeError = createError('PLANTS_DECODED_BODY_TOO_LARGE', 'body must not be larger than %s bytes once decoded', 413)
export const UnsupportedEncodingError = createError('PLANTS_UNSUPPORTED_ENCODING', 'content-encoding "%s" is not supported: send the body with one of %s, or with none', 415)
export const MissingTokenError = createError('PLANTS_MISSING_TOKEN', 'a bearer token is required: send "Authorization: Bearer <token>"', 401)
export const InvalidTokenError = createError('PLANTS_INVALID_TOKEN', 'the bearer token is not valid', 401)
export const PlantConflictError = createError('PLANTS_CONFLICT', 'a plant with id %s already exists with another name or tag', 409)
export const StoreFullError = createError('PLANTS_STORE_FULL', 'the plant store is full', 507)
export const StoreUnavailableError = createError('PLANTS_STORE_UNAVAILABLE', 'the plant store is unavailable, retry later', 503)
/**
 * The store lost the write after it was sent (the connection dropped or timed out before the commit
 * was confirmed): it may be stored or not. Not a "nothing was stored": the identical request is safe
 * to send again, and answers 200 once the plant is there (docs/storage.md, High availability).
 */
export const StoreOutcomeUnknownError = createError('PLANTS_STORE_OUTCOME_UNKNOWN', 'the plant store did not confirm the write: the outcome is unknown; retrying the identical request is safe, it answers 200 if the plant was stored', 503)
/** /readyz while creates fail: reads may work (a synchronous standby gone), writes do not. */
export const WritesFailingError = createError('PLANTS_WRITES_FAILING', 'the service is not ready: creates have failed for %s ms with no success', 503)
export const NotReadyError = createError('PLANTS_NOT_READY', 'the service is not ready', 503)
export const OverloadedError = createError('PLANTS_OVERLOADED', 'the service is overloaded, retry later', 503)
export const RateLimitedError = createError('PLANTS_RATE_LIMITED', 'too many requests with this token: at most %s per minute, retry in %s s', 429)
export const MethodNotAllowedError = createError('PLANTS_METHOD_NOT_ALLOWED', '%s is not allowed on %s; allowed: %s', 405)
export const MissingHostError = createError('PLANTS_MISSING_HOST', 'an HTTP/1.1 request must carry a Host header', 400)
export const ExpectationFailedError = createError('PLANTS_EXPECTATION_FAILED', 'the expectation "%s" cannot be met: send no Expect header, or Expect: 100-continue', 417)
export const DuplicateHostError = createError('PLANTS_DUPLICATE_HOST', 'the request carries %s Host headers: send exactly one', 400)
export const InvalidHostError = createError('PLANTS_INVALID_HOST', 'the Host header "%s" is not a valid host[:port]', 400)
export const ConnectRefusedError = createError('PLANTS_CONNECT_REFUSED', 'CONNECT is not supported: this service is not a proxy', 400)
export const VersionNotSupportedError = createError('PLANTS_VERSION_NOT_SUPPORTED', '%s is not supported: send HTTP/1.1', 505)
export const DuplicateAuthorizationError = createError('PLANTS_DUPLICATE_AUTHORIZATION', 'the request carries %s Authorization headers: send exactly one', 400)

// A bad setting; in lib/ so that the stores (src/plants/) throw it without importing the configuration.
export { ConfigError } from './lib/config-error.js'

/**
 * A store's named failure (plants/plant-repository.ts): the one list of them, for whoever must tell
 * a store's answer from anything else (the error handler, the failure log, the PostgreSQL batch).
 */
export function isStoreError (error: unknown): boolean {
  return error instanceof StoreUnavailableError || error instanceof StoreOutcomeUnknownError ||
    error instanceof StoreFullError || error instanceof WritesFailingError
}

/**
 * The 405 for a method the resource at `path` does not take, with the Allow header a 405 must carry
 * (RFC 9110 §15.5.6): `allow` lists the methods that act on the resource. The error handler turns it
 * into the Error record; the header set here stays on the reply.
 */
export function methodNotAllowed (request: FastifyRequest, reply: FastifyReply, path: string, allow: string): FastifyError {
  reply.header('allow', allow)
  return new MethodNotAllowedError(request.method, path, allow)
}

/** Messages for Fastify's own 4xx errors, written for the people who call this API. */
const frameworkMessages: Record<string, (request: FastifyRequest) => string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (request) => `body must not be larger than ${request.routeOptions.bodyLimit} bytes`,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => 'content-type must be application/json',
  FST_ERR_CTP_EMPTY_JSON_BODY: () => 'body must be a JSON object, and it is empty',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => 'body length does not match the content-length header',
  FST_ERR_BAD_URL: () => 'the URL is not valid',
  FST_ERR_ASYNC_CONSTRAINT: () => 'the request cannot be routed'
}

/** What a 503 tells a client to wait before it retries, unless the error set its own. */
const RETRY_AFTER_SECONDS = '1'

/** Refusals logged elsewhere, or not worth a warning each (a 505 is the client's doing, and has its access line). */
function quietlyRefused (error: FastifyError): boolean {
  return error instanceof VersionNotSupportedError || error instanceof OverloadedError || error instanceof NotReadyError || isStoreError(error)
}

function statusOf (error: FastifyError): number {
  const status = error.statusCode ?? 500
  return status >= 400 && status <= 599 ? status : 500
}

export function errorRecord (status: number, message: string): ErrorRecord {
  return { error: status, message }
}

/**
 * Turns any error into the Error record. 5xx details go to the log, never to the client. An error
 * may carry reply headers in `headers` (the http-errors convention Fastify's own handler follows),
 * e.g. a 415's Accept-Encoding.
 */
export function sendError (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const status = statusOf(error)
  const headers = (error as { headers?: Record<string, string> }).headers
  if (headers !== undefined) reply.headers(headers)
  let message: string
  if (status >= 500) {
    if (status === 500) request.log.error({ err: error }, 'request failed')
    // Logged once per interval, not here each time: a shed request by plugins/under-pressure.ts,
    // a store failure (and so a /readyz that fails with it) by plants/observed-plant-repository.ts.
    // During an outage every refused request still has its access line.
    else if (!quietlyRefused(error)) request.log.warn({ err: error }, 'request refused')
    message = status === 500 ? 'internal server error' : error.code?.startsWith('PLANTS_') === true ? error.message : STATUS_CODES[status] ?? 'server error'
    if (status === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', RETRY_AFTER_SECONDS)
  } else {
    message = frameworkMessages[error.code]?.(request) ?? error.message
  }
  if (status === 401) {
    reply.header('www-authenticate', error instanceof InvalidTokenError
      ? 'Bearer realm="plants", error="invalid_token"'
      : 'Bearer realm="plants"')
  }
  // Stryker disable next-line StringLiteral: equivalent: Fastify clears a reply's content-type before its error handler and types an object application/json; charset=utf-8 itself; stated here as the contract
  reply.code(status).type('application/json; charset=utf-8').send(errorRecord(status, message))
}

/**
 * Installs the one error shape on every path an error can take out of Fastify. `send` is sendError,
 * or sendError behind what adds the CORS headers (plugins/http-edge.ts). A method a known path does
 * not answer never reaches the not-found handler: the edge answers it 405 first (edge-refusals.ts).
 */
export function installErrorHandlers (app: FastifyInstance, send: typeof sendError = sendError): void {
  app.setErrorHandler(send)
  app.setNotFoundHandler((request, reply) => {
    // Stryker disable next-line StringLiteral: split() always returns one element at least; the fallback is for the type checker
    const path = request.url.split('?', 1)[0] ?? ''
    reply.code(404).send(errorRecord(404, `no route for ${request.method} ${path.slice(0, 200)}`))
  })
}

/**
 * Statuses of the parser's errors, 400 for any other: HTTP/2's connection preface (`PRI *
 * HTTP/2.0`, a client that speaks HTTP/2 in cleartext) is a 505, and so is a request line whose
 * version is well-formed but one Node's parser refuses (`HTTP/1.2`, `HTTP/3.0`: versionRefused):
 * this service speaks HTTP/1.1 (and 1.0).
 */
const CLIENT_ERROR_STATUS: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
  HPE_PAUSED_H2_UPGRADE: 505
}

/** A request line with a well-formed version (`HTTP/` digit `.` digit, RFC 9112 §2.3) at the start of the bytes. */
const REQUEST_LINE_VERSION = /^[^\r\n ]+ [^\r\n ]+ HTTP\/\d\.\d\r?\n/

/** Whether the parser refused a well-formed version (a 505), not a garbled one (a 400). */
function versionRefused (error: Error & { code?: string, rawPacket?: unknown }): boolean {
  return error.code === 'HPE_INVALID_VERSION' && Buffer.isBuffer(error.rawPacket) && REQUEST_LINE_VERSION.test(error.rawPacket.toString('latin1'))
}
const CLIENT_ERROR_MESSAGE: Record<number, string> = {
  431: 'request headers are too large',
  408: 'the request took too long to arrive',
  505: 'the HTTP version is not supported: send HTTP/1.1'
}

/**
 * Malformed HTTP never reaches Fastify's request path: Node hands the socket to this handler.
 * Answers with an Error record where the socket can still take a reply; returns its status, or
 * undefined when the socket could take none, and calls `answered` with the status once the reply is
 * written in full: never for a client that is gone. (Node 22 reports a
 * connection reset in the middle of a request as HPE_INVALID_EOF_STATE on a socket that still looks
 * writable; the reply's write is what fails.)
 *
 * Bytes that arrive behind a request still being answered (pipelined) are not answered before it:
 * writing our reply at once and ending the socket would drop the reply in flight, whose request may
 * have stored a plant. So the reply in flight (Node's "current attached ServerResponse", the
 * socket's `_httpMessage`) is finished first, then ours follows and the connection ends. Bytes after
 * a request that asked for `Connection: close` are ignored (RFC 9112 §9.6): Node ends the
 * connection once that request is answered.
 */
export function clientErrorHandler (error: Error & { code?: string, rawPacket?: unknown }, socket: Socket, answered?: (status: number) => void): number | undefined {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return undefined
  }
  if (error.code === 'HPE_CLOSED_CONNECTION') {
    if (replyInFlight(socket) === undefined) socket.destroy()
    return undefined
  }
  const status = versionRefused(error) ? 505 : CLIENT_ERROR_STATUS[String(error.code)] ?? 400
  const body = JSON.stringify(errorRecord(status, CLIENT_ERROR_MESSAGE[status] ?? 'the request is not valid HTTP'))
  const reply = `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`
  afterRepliesInFlight(socket, () => {
    if (socket.writable) socket.end(reply, (failed?: Error | null) => { if (failed == null) answered?.(status) })
    else socket.destroy()
  })
  return status
}

/**
 * The reply being written on a socket to a request that has fully arrived: the bad bytes then came
 * after that request. Undefined when there is none, it has finished, or its own request is the one
 * that broke (a bad chunk in its body), which is answered at once as before.
 */
function replyInFlight (socket: Socket): ServerResponse | undefined {
  const reply = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
  return reply === undefined || reply === null || reply.writableFinished || !reply.req.complete ? undefined : reply
}

/**
 * Calls `then` once no reply is in flight on the socket: when one finishes, Node has already handed
 * the socket to the next queued reply (its own 'finish' listener runs first), which is waited for too.
 */
function afterRepliesInFlight (socket: Socket, then: () => void): void {
  const reply = replyInFlight(socket)
  if (reply === undefined) {
    then()
    return
  }
  // 'close' too: a reply that fails, or whose connection closes, never finishes.
  const next = () => {
    reply.removeListener('finish', next)
    reply.removeListener('close', next)
    afterRepliesInFlight(socket, then)
  }
  reply.once('finish', next)
  reply.once('close', next)
}
