import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotReadyError } from '../errors.js'
import type { PlantRepository } from '../plants/plant-repository.js'
import { ErrorRecord, Health } from '../schemas.js'

export interface HealthRoutesOptions {
  repository: PlantRepository
  /** True once shutdown has begun: the load balancer should stop sending traffic. */
  isClosing: () => boolean
}

/** Probes for orchestrators: open, without a token. */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (app, { repository, isClosing }) => {
  app.get('/livez', {
    schema: { summary: 'The process is up', security: [], response: { 200: Type.Ref(Health, { description: 'The process answers' }) } }
  }, async () => ({ status: 'ok' }))

  app.get('/readyz', {
    schema: {
      summary: 'The store is reachable and the service is not shutting down',
      security: [],
      response: {
        200: Type.Ref(Health, { description: 'Ready for traffic' }),
        503: Type.Ref(ErrorRecord, { description: 'Not ready: the store is unreachable or the service is shutting down' })
      }
    }
  }, async () => {
    if (isClosing()) throw new NotReadyError()
    try {
      await repository.ready()
    } catch (cause) {
      throw new NotReadyError({ cause })
    }
    return { status: 'ready' }
  })
}
