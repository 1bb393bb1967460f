import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyHttpOptions, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import {
  clientErrorHandler, ConnectRefusedError, DuplicateAuthorizationError, DuplicateHostError, ExpectationFailedError,
  installErrorHandlers, InvalidHostError, MethodNotAllowedError, MissingHostError, pathOf, rawErrorReply, sendError,
  VersionNotSupportedError
} from '../errors.js'
import { requestId } from './access-log.js'
import type { Metrics } from './metrics.js'

/**
 * `corsOrigins`: CORS_ORIGINS, exact origins or ['*']; undefined: no CORS header at all (plugins/cors.ts).
 * `metrics`: where replies that bypass the hooks are counted (a bad URL, malformed HTTP); absent: not counted.
 */
export interface HttpEdgeOptions { corsOrigins?: readonly string[] | undefined, metrics?: Metrics | undefined }

/**
 * The HTTP edge: what Node would answer with a bare reply or drop (no Host, an Expect, CONNECT,
 * malformed bytes) gets the Error record with a request id. Duplicate headers are joined (RFC 9110
 * §5.3), so that a request never acts on half of what it carries.
 */
export async function createHttpEdge ({ corsOrigins: origins, metrics }: HttpEdgeOptions = {}) {
  const cors = origins === undefined ? undefined : (await import('./cors.js')).corsPolicy(origins)
  // Error replies carry the CORS headers even when @fastify/cors's hook never ran for them.
  const send = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    cors?.headersOfErrors(request, reply)
    sendError(error, request, reply)
  }
  const turns = new WeakMap<Socket, Turns>()

  const options: Pick<FastifyHttpOptions<Server>, 'frameworkErrors' | 'clientErrorHandler'> = {
    // Errors before routing (a bad URL) skip the hooks: the first hook's work is done here.
    frameworkErrors: (error, request, reply) => {
      begin(request, reply)
      awaitTurn(request, reply, turns, () => {
        send(versionNotSupported(request.raw) ?? error, request, reply)
        // Fastify starts no reply clock for a request it could not route.
        metrics?.requests.observe(request.method, undefined, reply.statusCode, 0)
      })
    },
    // Malformed HTTP has no request: counted as an unmatched _OTHER of 0 s once its reply is written.
    clientErrorHandler: (error, socket) => {
      clientErrorHandler(error, socket, replyInFlight(turns.get(socket)), (status) => {
        metrics?.requests.observe('_OTHER', undefined, status, 0)
      })
    }
  }

  const plugin = fp(async function httpEdge (app: FastifyInstance) {
    // QUERY is routed nowhere, so its content is never read (as a method with a body, Fastify gave it a 400).
    app.addHttpMethod('QUERY', { hasBody: false, overrideExisting: true })
    const allowed = collectAllowedMethods(app)
    // Without these two listeners Node answers an Expect other than 100-continue with a bare 417 before any
    // hook (so before the token), and writes 100 Continue for any Expect that mentions 100-continue.
    app.server.on('checkContinue', (request: IncomingMessage, response) => {
      if (onlyContinue(request.headers.expect as string)) response.writeContinue()
      app.routing(request, response)
    })
    app.server.on('checkExpectation', (request: IncomingMessage, response) => { app.routing(request, response) })
    // Node hands a CONNECT to `'connect'` listeners with the bare socket (without one, it destroys it
    // unanswered): its 400 is written on the socket, and nothing sent after it is read.
    app.server.on('connect', (request: IncomingMessage, socket: Socket) => {
      // Node took its own listeners off the socket: a reset must not become an uncaught error.
      socket.on('error', () => {})
      const reqId = requestId(request)
      const error = versionNotSupported(request) ?? new ConnectRefusedError()
      const status = error.statusCode as number
      // Closed once written: the socket has left the HTTP server, and with it the server's timeouts.
      socket.write(rawErrorReply(status, error.message, reqId))
      socket.destroySoon()
      app.log.info({ reqId, method: 'CONNECT', status, ms: 0 }, 'request')
      metrics?.requests.observe('CONNECT', undefined, status, 0)
    })
    installErrorHandlers(app, send)
    app.addHook('onRequest', (request, reply, done) => {
      begin(request, reply)
      const refused = refusedAtTheEdge(request, reply, allowed)
      awaitTurn(request, reply, turns, () => { done(refused) })
    })
    // Before the overload check and auth (registered after the edge): preflights need no token.
    if (cors !== undefined) await app.register(cors.plugin)
  }, { name: 'http-edge' })

  return { options, http: { requireHostHeader: false, joinDuplicateHeaders: true }, plugin }
}

/** No content sniffing, no cache (replies answer writes); a later header wins (the Swagger UI's files). */
function begin (request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id)
  reply.header('x-content-type-options', 'nosniff')
  reply.header('cache-control', 'no-store')
}

/** A Host field value (RFC 9112 §3.2, RFC 3986 §3.2.2): `uri-host [":" port]`, no userinfo, no space. */
const IP_LITERAL = /\[(?:[0-9A-Fa-f:.]+|[vV][0-9A-Fa-f]+\.[\w\-.~!$&'()*+,;=:]+)\]/.source
const REG_NAME = /(?:[\w\-.~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*/.source
export const HOST = new RegExp(`^(?:${IP_LITERAL}|${REG_NAME})(?::[0-9]*)?$`)

function headerLines (request: IncomingMessage, name: string): number {
  return request.rawHeaders.filter((line, i) => i % 2 === 0 && line.toLowerCase() === name).length
}

/** Whether every member of an Expect value is `100-continue` (RFC 9110 §10.1.1: a list, any case). */
export function onlyContinue (expect: string): boolean {
  return expect.split(',').every((member) => member.trim().toLowerCase() === '100-continue')
}

export function unmetExpectation (request: FastifyRequest): FastifyError | undefined {
  const expect = request.headers.expect
  return expect !== undefined && !onlyContinue(expect) ? new ExpectationFailedError(expect.slice(0, 100)) : undefined
}

export interface Allowed { methods: ReadonlySet<string>, allow: string }

/** The methods of each static path, from the routes as they are registered, OPTIONS last. */
export function collectAllowedMethods (app: FastifyInstance): ReadonlyMap<string, Allowed> {
  const allowed = new Map<string, Allowed>()
  app.addHook('onRoute', ({ method, url }) => {
    const methods = new Set([...allowed.get(url)?.methods ?? [], ...[method].flat()])
    const last = (one: string) => Number(one === 'OPTIONS')
    allowed.set(url, { methods, allow: [...methods].sort((a, b) => last(a) - last(b)).join(', ') })
  })
  return allowed
}

/** A request line in another version than HTTP/1.x is refused, and its connection closed. */
function versionNotSupported ({ httpVersionMajor, httpVersion }: IncomingMessage): FastifyError | undefined {
  if (httpVersionMajor === 1) return undefined
  return Object.assign(new VersionNotSupportedError(`HTTP/${httpVersion}`), { headers: { connection: 'close' } })
}

/**
 * What the first hook refuses, in this order: a version other than HTTP/1.x (505); an HTTP/1.1
 * request without Host, with two, or with a bad one (400); a method a known path does not answer (405
 * with Allow, before any body is read); an unmet Expect on a route without auth (417; behind auth,
 * `request.client` is null and auth answers it).
 */
function refusedAtTheEdge (request: FastifyRequest, reply: FastifyReply, allowed: ReadonlyMap<string, Allowed>) {
  const version = versionNotSupported(request.raw)
  if (version !== undefined) return version
  const method = request.method
  const host = request.headers.host
  if (host === undefined) {
    if (request.raw.httpVersionMinor >= 1) return new MissingHostError()
  } else if (!HOST.test(host)) {
    const lines = headerLines(request.raw, 'host')
    return lines > 1 ? new DuplicateHostError(lines) : new InvalidHostError(host.slice(0, 100))
  }
  // A request that met no route, or an OPTIONS that is no preflight (those are the CORS policy's).
  if (request.is404 || (method === 'OPTIONS' && request.headers['access-control-request-method'] === undefined)) {
    const path = pathOf(request.url)
    const known = allowed.get(path)
    if (known !== undefined && !known.methods.has(method)) {
      // The Allow header a 405 must carry (RFC 9110 §15.5.6).
      reply.header('allow', known.allow)
      return new MethodNotAllowedError(method, path, known.allow)
    }
  }
  return request.client === undefined ? unmetExpectation(request) : undefined
}

/** The 400 of RFC 6750 §3.1 for a request with more than one Authorization header, or undefined. */
export function duplicateAuthorization (request: FastifyRequest): FastifyError | undefined {
  const count = headerLines(request.raw, 'authorization')
  if (count < 2) return undefined
  const headers = { 'www-authenticate': 'Bearer realm="plants", error="invalid_request"' }
  return Object.assign(new DuplicateAuthorizationError(count), { headers })
}

/**
 * The last two replies begun on a connection, each forgotten once written: a reply held past its end
 * (strongly or by a WeakRef) lived into the old generation, +10 MB of RSS under load.
 */
export interface Turns { last?: ServerResponse | undefined, previous?: ServerResponse | undefined }

/**
 * The reply malformed bytes must wait for: replies are written in order, so the last one to a complete
 * request (the last request is incomplete when its own body broke) finishes after all others.
 */
export function replyInFlight ({ last, previous }: Turns = {}): ServerResponse | undefined {
  const reply = last?.req.complete === false ? previous : last
  return reply?.writableFinished === false ? reply : undefined
}

/**
 * Node emits pipelined requests at once and queues only their replies (without a socket yet). A
 * request waits until its reply gets the socket; if the connection closes first (an earlier reply
 * said `Connection: close`, RFC 9112 §9.6), it is dropped unread and logged.
 */
export function awaitTurn (request: FastifyRequest, reply: FastifyReply, turns: WeakMap<Socket, Turns>,
  proceed: () => void): void {
  const response = reply.raw
  const socket = request.raw.socket
  let turn = turns.get(socket)
  if (turn === undefined) {
    turn = {}
    turns.set(socket, turn)
  }
  turn.previous = turn.last
  turn.last = response
  response.once('finish', () => {
    if (turn.last === response) turn.last = undefined
    if (turn.previous === response) turn.previous = undefined
  })
  const assigned = response.socket
  // Its reply owns the connection, unless an earlier reply has already ended it.
  if (assigned !== null ? !assigned.writable : socket.destroyed) notProcessed(request)
  else if (assigned !== null) proceed()
  else {
    const onTurn = () => {
      socket.removeListener('close', onClose)
      proceed()
    }
    const onClose = () => {
      response.removeListener('socket', onTurn)
      notProcessed(request)
    }
    response.once('socket', onTurn)
    socket.once('close', onClose)
  }
}

function notProcessed (request: FastifyRequest): void {
  request.log.info({ method: request.method, route: request.routeOptions.url, status: null },
    'request not processed: an earlier reply closed its connection')
}
