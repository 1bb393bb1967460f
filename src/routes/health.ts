import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { MissingHostError, NotReadyError, WritesFailingError } from '../errors.js'
import type { PlantRepository } from '../plants/plant-repository.js'
import { errorResponse, Health, jsonResponse } from '../schemas.js'

/** A probe's schema: open (no token), a Health answer, and the Error record for a malformed request. */
const probe = (operationId: string, summary: string, responses = {}) => ({
  schema: {
    summary,
    operationId,
    security: [],
    response: {
      200: jsonResponse(summary, Health),
      '4XX': errorResponse(400, 'Malformed HTTP, such as HTTP/1.1 without Host', new MissingHostError().message),
      ...responses
    }
  }
})

const NOT_READY = errorResponse(503, 'The store is failing, or the service is closing or overloaded',
  new NotReadyError().message, ['retry-after'])

export const healthRoutes: FastifyPluginAsyncTypebox<{ repository: PlantRepository }> = async (app, { repository }) => {
  app.get('/livez', probe('getLiveness', 'The process is up'), async () => ({ status: 'ok' }))

  app.get('/readyz', probe('getReadiness', 'The store is reachable and the service is not shutting down',
    { 503: NOT_READY }), async () => {
    // Shutting down (plugins/shutdown.ts): the load balancer should stop sending traffic.
    if (app.closing) throw new NotReadyError()
    // Its own message: the store answers, but creates have been failing (docs/storage.md).
    await repository.ready().catch((cause: unknown) => {
      throw cause instanceof WritesFailingError ? cause : new NotReadyError({ cause })
    })
    return { status: 'ready' }
  })
}
