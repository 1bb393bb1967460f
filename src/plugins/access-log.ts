import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify'
import type { Bindings, ChildLoggerOptions } from 'pino'
import type { Client } from './auth.js'
import { parseTraceparent } from '../lib/trace-context.js'

/** pino's LogFn without its overloads, to pass any arguments on as they came. */
type Forward = (...args: unknown[]) => void

/** A caller's request id is kept when it is short printable ASCII; otherwise one is made. */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/

/**
 * A made id is this process's random prefix (64 bits, so two processes or two runs do not share
 * one) and a sequence number in base 36: unique, in order within a process, and half the cost of
 * a random UUID per request (0.7 µs of CPU per request, bench/README.md). It tells a caller how
 * many requests this process has served, which is no secret here.
 */
const ID_PREFIX = `${randomBytes(8).toString('hex')}-`
let sequence = 0

export function requestId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : ID_PREFIX + (++sequence).toString(36)
}

/**
 * request.log and reply.log: the pino child with the request id, made only when something logs
 * through it. Fastify makes a child per request by default, and pino's child() (bindings
 * serialised, a new logger object) was the dearest part of having a logger at all; most requests
 * only ever write the access line, which AccessLog writes through the root with the id itself.
 * Every other request-scoped line (errors.ts, Fastify, plugins) still carries the id, via the child.
 */
export class RequestLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | undefined
  readonly root: FastifyBaseLogger
  readonly #bindings: Bindings
  readonly #options: ChildLoggerOptions

  constructor (root: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.root = root
    this.#bindings = bindings
    this.#options = options
  }

  get #log (): FastifyBaseLogger {
    return (this.#child ??= this.root.child(this.#bindings, this.#options))
  }

  get level (): string { return this.#child?.level ?? this.#options.level ?? this.root.level }
  set level (level: string) { this.#log.level = level }

  // Prototype methods, not per-instance closures: one small object per request is the whole cost.
  fatal (...args: unknown[]): void { const log = this.#log; (log.fatal as Forward).apply(log, args) }
  error (...args: unknown[]): void { const log = this.#log; (log.error as Forward).apply(log, args) }
  warn (...args: unknown[]): void { const log = this.#log; (log.warn as Forward).apply(log, args) }
  info (...args: unknown[]): void { const log = this.#log; (log.info as Forward).apply(log, args) }
  debug (...args: unknown[]): void { const log = this.#log; (log.debug as Forward).apply(log, args) }
  trace (...args: unknown[]): void { const log = this.#log; (log.trace as Forward).apply(log, args) }
  silent (): void {}

  child (bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#log.child(bindings, options)
  }
}

/** Fastify's childLoggerFactory: the lazy RequestLogger instead of a pino child per request. */
export function requestLoggerFactory (logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new RequestLogger(logger, bindings, options)
}

/**
 * The caller's W3C trace context on its request's line, `traceId` and `parentSpanId`, when its
 * `traceparent` header is valid (lib/trace-context.ts); an invalid one is left out. Parsed only
 * when the header is there: a request without one pays a property read.
 */
function withTrace<Fields extends object> (fields: Fields, request: FastifyRequest): Fields {
  const header = request.headers.traceparent
  if (header === undefined) return fields
  const trace = parseTraceparent(header)
  return trace === undefined ? fields : { ...fields, traceId: trace.traceId, parentSpanId: trace.parentSpanId }
}

/**
 * One line per completed request instead of Fastify's two: request id, method, route pattern,
 * client, status and duration. Never the URL (its query could carry a token) and never a header.
 * `client` is the accepted token's client (auth.ts: its name, or a label derived from the token's
 * SHA-256); a request without an accepted token (401, 404, a shed 503) has no `client` field.
 */
export class AccessLog extends LogController {
  /**
   * Per method and route pattern (a bounded set: the app's routes), a child of the root logger
   * with both bound: pino serialises bindings once, when the child is made, so each line
   * serialises three fields instead of five (570 → 380 ns a line, bench/README.md). Below it, a
   * child per client (the token set's Client objects: bounded, and let go when a reload replaces
   * them) with `client` bound too: about 15 ns a line instead of about 100 ns as a field.
   */
  readonly #routeLoggers = new Map<string, Map<string, RouteLoggers>>()
  readonly #completed: Completed | undefined

  /**
   * `completed` is called first for every request the access line is written for (with metrics
   * on: app.ts counts the request there). Fastify calls requestCompleted after the onResponse
   * hooks, for every reply that went through the hooks; doing that work here rather than in an
   * onResponse hook spares every request Fastify's onResponse hook runner. It is given the route
   * read here: Fastify's request.routeOptions builds a new object of twelve fields at each read.
   */
  constructor (completed?: Completed) {
    super()
    this.#completed = completed
  }

  override incomingRequest (): void {}

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const route = request.routeOptions.url
    this.#completed?.(request, reply, route)
    // The root logger with the id written here, the same line the child would write, without
    // making the child (RequestLogger above) for it.
    const root = reply.log instanceof RequestLogger ? reply.log.root : reply.log
    const ms = Math.round(reply.elapsedTime * 100) / 100
    if (error) {
      root.error(withTrace({ reqId: request.id, method: request.method, route, client: request.client?.name, status: reply.statusCode, ms, err: error }, request), 'request failed')
    } else if (route === undefined) {
      // No route (a 404): the method is whatever the client sent, so it is not a key to keep.
      root.info(withTrace({ reqId: request.id, method: request.method, route, status: reply.statusCode, ms }, request), 'request')
    } else {
      this.#routeLogger(root, request.method, route, request.client).info(withTrace({ reqId: request.id, status: reply.statusCode, ms }, request), 'request')
    }
  }

  /**
   * Keyed by route, then method: both are strings Fastify and Node keep, so no key is built per
   * line; then by the client object auth set, when there is one.
   */
  #routeLogger (root: FastifyBaseLogger, method: string, route: string, client: Client | null | undefined): FastifyBaseLogger {
    let byMethod = this.#routeLoggers.get(route)
    if (byMethod === undefined) this.#routeLoggers.set(route, byMethod = new Map())
    let loggers = byMethod.get(method)
    if (loggers === undefined) byMethod.set(method, loggers = { log: root.child({ method, route }), byClient: new WeakMap() })
    if (client === null || client === undefined) return loggers.log
    let log = loggers.byClient.get(client)
    if (log === undefined) loggers.byClient.set(client, log = loggers.log.child({ client: client.name }))
    return log
  }
}

/** What else is done when a request completes: `route` is the matched route's template, undefined without one. */
export type Completed = (request: FastifyRequest, reply: FastifyReply, route: string | undefined) => void

interface RouteLoggers {
  log: FastifyBaseLogger
  byClient: WeakMap<Client, FastifyBaseLogger>
}
