import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'
import { parseTraceparent } from './trace-context.js'
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
    const line = Object.assign({
      method,
      route,
      client: request.client?.name,
      status: reply.statusCode,
      ms: Math.round(seconds * 100000) / 100
    }, parseTraceparent(request.headers.traceparent))
    // The request's child logger writes its id.
    if (error) request.log.error({ ...line, err: error }, 'request failed')
    else request.log.info(line, 'request')
  }
}
