import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotReadyError, WritesFailingError } from '../errors.js'
import type { PlantRepository } from '../plants/plant-repository.js'
import { errorResponse, Health, jsonResponse } from '../schemas.js'

/** A probe's schema: open (no token), a Health answer, and the Error record for a malformed request. */
const probe = (operationId: string, summary: string, answer: string, responses = {}) => ({
  schema: {
    summary,
    operationId,
    security: [],
    response: {
      200: jsonResponse(answer, Health),
      '4XX': errorResponse('missingHost', 'A malformed request, such as HTTP/1.1 without Host'),
      ...responses
    }
  }
})

const NOT_READY = errorResponse(503, 'Not ready: the store is unreachable or failing, the service is shutting down, ' +
  'or it is overloaded', ['retry-after'])

/** Probes for orchestrators. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ repository: PlantRepository }> = async (app, { repository }) => {
  app.get('/livez', probe('getLiveness', 'The process is up', 'The process answers: `{"status":"ok"}`'),
    async () => ({ status: 'ok' }))

  app.get('/readyz', probe('getReadiness', 'The store is reachable and the service is not shutting down',
    'Ready for traffic: `{"status":"ready"}`', { 503: NOT_READY }), async () => {
    // Shutting down (plugins/shutdown.ts): the load balancer should stop sending traffic.
    if (app.closing) throw new NotReadyError()
    // Its own message: the store answers, but creates have been failing (docs/storage.md).
    await repository.ready().catch((cause: unknown) => {
      throw cause instanceof WritesFailingError ? cause : new NotReadyError({ cause })
    })
    return { status: 'ready' }
  })
}
