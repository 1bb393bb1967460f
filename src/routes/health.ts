import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotReadyError, WritesFailingError } from '../errors.js'
import type { PlantRepository } from '../plants/plant-repository.js'
import { errorResponse, Health, malformedHttpResponse, responseHeaders } from '../schemas.js'

export interface HealthRoutesOptions {
  repository: PlantRepository
  /** True once shutdown has begun: the load balancer should stop sending traffic. */
  isClosing: () => boolean
}

/** Probes for orchestrators: open, without a token. */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (app, { repository, isClosing }) => {
  app.get('/livez', {
    schema: {
      summary: 'The process is up',
      operationId: 'getLiveness',
      security: [],
      response: { 200: { description: 'The process answers: `{"status":"ok"}`', headers: responseHeaders(), content: { 'application/json': { schema: Type.Ref(Health) } } }, '4xx': malformedHttpResponse }
    }
  }, async () => ({ status: 'ok' }))

  app.get('/readyz', {
    schema: {
      summary: 'The store is reachable and the service is not shutting down',
      operationId: 'getReadiness',
      security: [],
      response: {
        200: { description: 'Ready for traffic: `{"status":"ready"}`', headers: responseHeaders(), content: { 'application/json': { schema: Type.Ref(Health) } } },
        '4xx': malformedHttpResponse,
        503: errorResponse('Not ready: the store is unreachable, creates have failed for longer than the statement timeout with no success (PostgreSQL), the service is shutting down, or it is overloaded', ['notReady', 'writesFailing', 'overloaded'], ['retry-after'])
      }
    }
  }, async () => {
    if (isClosing()) throw new NotReadyError()
    try {
      await repository.ready()
    } catch (cause) {
      // Its own message: the store answers, but creates have been failing (docs/storage.md, High availability).
      throw cause instanceof WritesFailingError ? cause : new NotReadyError({ cause })
    }
    return { status: 'ready' }
  })
}
