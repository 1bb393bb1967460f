import { ServerResponse, type IncomingMessage, type Server, type ServerOptions } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyHttpOptions, FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { clientErrorHandler, installErrorHandlers, sendError } from '../errors.js'
import { collectAllowedMethods, refusedAtTheEdge, routeExpectations, versionNotSupported } from './edge-refusals.js'
import type { Metrics } from './metrics.js'
import { awaitTurn } from './pipelining.js'
import { setSecurityHeaders } from './security-headers.js'

export interface HttpEdgeOptions {
  /** CORS_ORIGINS: exact origins, or ['*']; undefined: no CORS header at all (plugins/cors.ts). */
  corsOrigins?: readonly string[] | undefined
  /** Where replies that bypass the hooks are counted (a bad URL, malformed HTTP); absent: not counted. */
  metrics?: Metrics | undefined
}

export interface HttpEdge {
  /**
   * The edge's Fastify options, which only the constructor takes: spread into Fastify's options,
   * `http` into its `http`.
   */
  options: Required<Pick<FastifyHttpOptions<Server>, 'frameworkErrors' | 'clientErrorHandler'>>
  http: Pick<ServerOptions, 'requireHostHeader' | 'joinDuplicateHeaders'>
  /** Registered once, first, before every other plugin and route (app.ts). */
  plugin: FastifyPluginAsync
}

/**
 * The HTTP edge: what every request meets before and around its route, as one plugin.
 *
 * - Requests Node's HTTP server would answer by itself with a bare reply (no Error record, no request
 *   id), or drop without a word, go through the app instead, which answers them with the Error
 *   record like any other: a missing Host (`requireHostHeader: false`), an Expect (edge-refusals.ts,
 *   routeExpectations), CONNECT (routeConnect below). A header sent twice is joined into one
 *   comma-separated value (`joinDuplicateHeaders`, RFC 9110 §5.3) instead of Node keeping the first,
 *   so a request never acts on half of what it carries: two Authorization headers never match a
 *   token and auth refuses them; two Host headers are refused here.
 * - The first hook of every request sets the request id and security headers (so that every reply
 *   that goes through the hooks carries them), refuses what edge-refusals.ts refuses (505, 400, 405,
 *   417), and makes a pipelined request wait for its turn (pipelining.ts).
 * - The error and not-found handlers (errors.ts), and errors found before routing (a bad URL, in
 *   `frameworkErrors`) or below HTTP (malformed bytes, in `clientErrorHandler`), with the metrics.
 * - CORS (cors.ts), loaded only when CORS_ORIGINS is set; its headers go on error replies too.
 * - QUERY (a safe method that may carry content) is routed nowhere, so its content is never read: as
 *   a method with a body, Fastify answered every QUERY without a Content-Type with its own 400.
 */
export async function createHttpEdge ({ corsOrigins: origins, metrics }: HttpEdgeOptions = {}): Promise<HttpEdge> {
  // Loaded only when configured, like the rate limiter.
  const cors = origins === undefined ? undefined : await loadCors(origins)
  // Error replies carry the CORS headers even when @fastify/cors's hook never ran for them.
  const send: typeof sendError = cors === undefined
    ? sendError
    : (error, request, reply) => {
        cors.addHeadersOfErrors(request, reply)
        sendError(error, request, reply)
      }

  const options: HttpEdge['options'] = {
    // Errors found before routing (a bad URL) skip the hooks: the request id is set here instead, and
    // a request line that is not HTTP/1.x is a 505 first, as in the first hook.
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id)
      setSecurityHeaders(reply)
      awaitTurn(request, reply, () => {
        send(versionNotSupported(request, reply) ?? error, request, reply)
        // Counted as 0 s: Fastify starts no reply clock for a request it could not route (its
        // reply.elapsedTime is 0 here).
        metrics?.requests.observe(request.method, undefined, reply.statusCode, 0)
      })
    },
    // Malformed HTTP has no request, method or start time: counted as an unmatched _OTHER of 0 s,
    // once its reply is written (a client that reset the connection got none).
    clientErrorHandler: metrics === undefined
      ? clientErrorHandler
      : (error, socket) => {
          // Stryker disable next-line StringLiteral: equivalent: metrics.ts counts any method outside the known ones as _OTHER, an empty one too
          clientErrorHandler(error, socket, (status) => { metrics.requests.observe('_OTHER', undefined, status, 0) })
        }
  }

  const plugin = fp(async function httpEdge (app: FastifyInstance) {
    app.addHttpMethod('QUERY', { hasBody: false, overrideExisting: true })
    const allowed = collectAllowedMethods(app)
    routeExpectations(app)
    routeConnect(app)
    installErrorHandlers(app, send)
    // Callback-style: an async hook costs a promise per request (about 4 µs here).
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id)
      setSecurityHeaders(reply)
      const refused = refusedAtTheEdge(request, reply, allowed)
      awaitTurn(request, reply, () => { done(refused) })
    })
    // Before the overload check and auth (registered after the edge): preflights need no token.
    if (cors !== undefined) await app.register(cors.policy, { origins: cors.origins })
  }, { name: 'http-edge' })

  return { options, http: { requireHostHeader: false, joinDuplicateHeaders: true }, plugin }
}

/** The CORS policy for `origins` (cors.ts), and what adds its headers to an error reply. */
async function loadCors (origins: readonly string[]) {
  const { corsPolicy, corsHeadersOfErrors } = await import('./cors.js')
  return { origins, policy: corsPolicy, addHeadersOfErrors: corsHeadersOfErrors(origins) }
}

/**
 * Node hands a CONNECT to `'connect'` listeners, with the bare socket, and without one destroys the
 * socket: no reply, no log line. Here it gets a reply object and goes through the router like any
 * request, so that the first hook answers it (400: edge-refusals.ts) with the Error record, its
 * access line and the request id; the connection then closes, and whatever the client sent after
 * the CONNECT is never read.
 */
function routeConnect (app: FastifyInstance): void {
  app.server.on('connect', (request: IncomingMessage, socket: Socket) => {
    // Node took its own listeners off the socket: a reset must not become an uncaught error (the
    // socket is destroyed with it).
    socket.on('error', () => {})
    const response = new ServerResponse(request)
    response.shouldKeepAlive = false
    response.assignSocket(socket)
    response.on('finish', () => {
      // Stryker disable next-line CallExpression: equivalent (no reply, log line or metric differs): the socket is ended just after; detached as Node detaches a finished reply
      response.detachSocket(socket)
      socket.destroySoon()
    })
    app.routing(request, response)
  })
}
