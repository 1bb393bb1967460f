import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'
import type { Metrics } from './metrics.js'

/** Every request's one access line (Fastify writes two) and its count in the request histogram, whoever answered
 * it. Never the URL (its query could carry a token) and never a header. */
export class AccessLog extends LogController {
  readonly #metrics: Metrics | undefined

  constructor (metrics?: Metrics) {
    super()
    this.#metrics = metrics
  }

  override incomingRequest (): void {}

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const { method, routeOptions: { url: route } } = request
    // Fastify starts no clock for a request it could not route (a bad URL).
    const seconds = (reply.elapsedTime || 0) / 1000
    this.#metrics?.requestDone(method, route, reply.statusCode, seconds)
    const ms = Math.round(seconds * 100000) / 100
    const trace = parseTraceparent(request.headers.traceparent)
    const line = { method, route, client: request.client?.name, status: reply.statusCode, ms, ...trace }
    // The request's child logger writes its id.
    if (error) request.log.error({ ...line, err: error }, 'request failed')
    else request.log.info(line, 'request')
  }
}

/** `version-traceid-parentid-flags`, lowercase hex; ids of all zeros are invalid. */
const TRACEPARENT = /^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}(?:-.*)?$/

/** The trace and the caller's span from a W3C `traceparent` (https://www.w3.org/TR/trace-context/), else undefined.
 * Version ff is invalid, version 00 ends at the flags, a later version may add `-` fields. */
export function parseTraceparent (header: string | string[] | undefined) {
  if (typeof header !== 'string' || header.length > 512 || !TRACEPARENT.test(header)) return undefined
  if (header.startsWith('ff') || (header.startsWith('00') && header.length !== 55)) return undefined
  return { traceId: header.slice(3, 35), parentSpanId: header.slice(36, 52) }
}
