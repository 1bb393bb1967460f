import Fastify, { type FastifyBaseLogger, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Config } from './config.js'
import { clientErrorHandler, installErrorHandlers, sendError } from './errors.js'
import { AccessLog, requestId } from './plugins/access-log.js'
import { auth, type TokenSet } from './plugins/auth.js'
import { jsonBody } from './plugins/json-body.js'
import { openapi } from './plugins/openapi.js'
import type { PlantRepository } from './plants/plant-repository.js'
import { createPlantService } from './plants/plant-service.js'
import { healthRoutes } from './routes/health.js'
import { plantRoutes } from './routes/plants.js'
import { sharedSchemas } from './schemas.js'
import { validatorCompiler } from './validation.js'

export interface AppOptions {
  config: Pick<Config, 'bodyLimit' | 'logLevel'>
  tokens: TokenSet
  repository: PlantRepository
  /** A pino logger to use (tests pass one that writes to memory); default: JSON on stdout at config.logLevel. */
  logger?: FastifyBaseLogger
}

/** The composition root: plugins in order. Never listens; server.ts does. */
export async function buildApp ({ config, tokens, repository, logger }: AppOptions) {
  const options: FastifyServerOptions = {
    bodyLimit: config.bodyLimit,
    genReqId: requestId,
    requestIdHeader: false,
    logController: new AccessLog(),
    // Requests that arrive while closing are served, with Connection: close (below), instead of
    // Fastify's fixed 503 body; /readyz turns 503 so the load balancer stops sending them.
    return503OnClosing: false,
    // Errors found before routing (a bad URL) skip the hooks: the request id is set here instead.
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id)
      sendError(error, request, reply)
    },
    clientErrorHandler
  }
  const app = Fastify(logger === undefined
    ? { ...options, logger: { level: config.logLevel } }
    : { ...options, loggerInstance: logger }
  ).withTypeProvider<TypeBoxTypeProvider>()

  app.setValidatorCompiler(validatorCompiler)
  for (const schema of sharedSchemas) app.addSchema(schema)
  installErrorHandlers(app)

  let closing = false
  app.addHook('preClose', async () => { closing = true })
  // Callback-style hooks on the hot path: an async hook costs a promise per request (about 4 µs here).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    // Idle keep-alive connections must not hold the exit back.
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
  app.addHook('onClose', async () => { await repository.close() })

  await app.register(jsonBody)
  await app.register(openapi)
  await app.register(healthRoutes, { repository, isClosing: () => closing })
  await app.register(async function protectedRoutes (scope) {
    await scope.register(auth, { tokens })
    await scope.register(plantRoutes, { plants: createPlantService(repository) })
  })
  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
