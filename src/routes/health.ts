import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotReadyError, WritesFailingError } from '../errors.js'
import type { PlantRepository } from '../plants/plant-repository.js'
import { errorResponse, Health, jsonResponse } from '../schemas.js'

export interface HealthRoutesOptions { repository: PlantRepository }

const MALFORMED = errorResponse('missingHost', 'A malformed request, such as HTTP/1.1 without Host')

/** Probes for orchestrators: open, without a token. */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (app, { repository }) => {
  app.get('/livez', {
    schema: {
      summary: 'The process is up',
      operationId: 'getLiveness',
      security: [],
      response: { 200: jsonResponse('The process answers: `{"status":"ok"}`', Health), '4XX': MALFORMED }
    }
  }, async () => ({ status: 'ok' }))

  app.get('/readyz', {
    schema: {
      summary: 'The store is reachable and the service is not shutting down',
      operationId: 'getReadiness',
      security: [],
      response: {
        200: jsonResponse('Ready for traffic: `{"status":"ready"}`', Health),
        '4XX': MALFORMED,
        503: errorResponse(503, 'Not ready: the store is unreachable or failing, the service is shutting down, ' +
          'or it is overloaded', ['retry-after'])
      }
    }
  }, async () => {
    // Shutting down (plugins/shutdown.ts): the load balancer should stop sending traffic.
    if (app.closing) throw new NotReadyError()
    try {
      await repository.ready()
    } catch (cause) {
      // Its own message: the store answers, but creates have been failing (docs/storage.md).
      throw cause instanceof WritesFailingError ? cause : new NotReadyError({ cause })
    }
    return { status: 'ready' }
  })
}
