import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotReadyError, WritesFailingError } from '../errors.js'
import type { PlantRepository } from '../plants/plant-repository.js'
import { errorResponse, Health } from '../schemas.js'

export interface HealthRoutesOptions {
  repository: PlantRepository
  /** True once shutdown has begun: the load balancer should stop sending traffic. */
  isClosing: () => boolean
}

/**
 * A probe never answers 4xx itself; Node answers these before any route runs, for any path (errors.ts,
 * clientErrorHandler). Documented because a client of any operation can meet them.
 */
const malformed = errorResponse('Malformed HTTP (400), headers over MAX_HEADER_BYTES (431), or a request slower than HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS (408); the connection is closed', 'notHttp', 'headersTooLarge', 'tooSlow')

/** Probes for orchestrators: open, without a token. */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (app, { repository, isClosing }) => {
  app.get('/livez', {
    schema: {
      summary: 'The process is up',
      operationId: 'getLiveness',
      security: [],
      response: { 200: Type.Ref(Health, { description: 'The process answers: `{"status":"ok"}`' }), '4xx': malformed }
    }
  }, async () => ({ status: 'ok' }))

  app.get('/readyz', {
    schema: {
      summary: 'The store is reachable and the service is not shutting down',
      operationId: 'getReadiness',
      security: [],
      response: {
        200: Type.Ref(Health, { description: 'Ready for traffic: `{"status":"ready"}`' }),
        '4xx': malformed,
        503: errorResponse('Not ready: the store is unreachable, creates have failed for longer than the statement timeout with no success (PostgreSQL), the service is shutting down, or it is overloaded', 'notReady', 'writesFailing', 'overloaded')
      }
    }
  }, async () => {
    if (isClosing()) throw new NotReadyError()
    try {
      await repository.ready()
    } catch (cause) {
      // Its own message: the store answers, but creates have been failing (README, High availability).
      throw cause instanceof WritesFailingError ? cause : new NotReadyError({ cause })
    }
    return { status: 'ready' }
  })
}
