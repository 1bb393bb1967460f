import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify'
import type { Client } from './auth.js'
import { parseTraceparent } from '../lib/trace-context.js'

/** A caller's request id is kept when it is short printable ASCII; otherwise one is made. */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/

/** A made id: this process's random prefix and a sequence number, cheaper than a random UUID. */
const ID_PREFIX = `${randomBytes(8).toString('hex')}-`
let sequence = 0

export function requestId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : ID_PREFIX + (++sequence).toString(36)
}

/** The caller's valid W3C `traceparent` on its request's line, as `traceId` and `parentSpanId`. */
function withTrace<Fields extends object> (fields: Fields, request: FastifyRequest): Fields {
  const trace = parseTraceparent(request.headers.traceparent)
  return trace === undefined ? fields : { ...fields, traceId: trace.traceId, parentSpanId: trace.parentSpanId }
}

/**
 * One line per completed request instead of Fastify's two: id, method, route, client, status and
 * duration. Never the URL (its query could carry a token) and never a header.
 */
export class AccessLog extends LogController {
  /** Per route and method, then client: children with those bound, as pino serialises bindings once. */
  readonly #routeLoggers = new Map<string, Map<string, RouteLoggers>>()
  readonly #completed: Completed | undefined

  /** `completed` (app.ts: the request metric) runs here, which spares each request an onResponse hook. */
  constructor (completed?: Completed) {
    super()
    this.#completed = completed
  }

  override incomingRequest (): void {}

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const route = request.routeOptions.url
    this.#completed?.(request, reply, route)
    // The app's logger, not the request's child: the id is written here, the rest is bound per route.
    const root = request.server.log
    const { id: reqId, method } = request
    const status = reply.statusCode
    const ms = Math.round(reply.elapsedTime * 100) / 100
    if (error) {
      const client = request.client?.name
      root.error(withTrace({ reqId, method, route, client, status, ms, err: error }, request), 'request failed')
    } else if (route === undefined) {
      // No route (a 404): the method is whatever the client sent, so it is not a key to keep.
      root.info(withTrace({ reqId, method, route, status, ms }, request), 'request')
    } else {
      this.#routeLogger(root, method, route, request.client).info(withTrace({ reqId, status, ms }, request), 'request')
    }
  }

  #routeLogger (root: FastifyBaseLogger, method: string, route: string, client: Client | null | undefined) {
    let byMethod = this.#routeLoggers.get(route)
    if (byMethod === undefined) this.#routeLoggers.set(route, byMethod = new Map())
    let loggers = byMethod.get(method)
    if (loggers === undefined) {
      byMethod.set(method, loggers = { log: root.child({ method, route }), byClient: new WeakMap() })
    }
    if (client === null || client === undefined) return loggers.log
    let log = loggers.byClient.get(client)
    if (log === undefined) loggers.byClient.set(client, log = loggers.log.child({ client: client.name }))
    return log
  }
}

/** What else is done when a request completes: `route` is the matched route's template, if any. */
export type Completed = (request: FastifyRequest, reply: FastifyReply, route: string | undefined) => void

interface RouteLoggers {
  log: FastifyBaseLogger
  byClient: WeakMap<Client, FastifyBaseLogger>
}
