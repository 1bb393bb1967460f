import type { Server } from 'node:http'
import Fastify, { type FastifyBaseLogger, type FastifyHttpOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { defaultHttpLimits, defaultOverloadLimits, type Config } from './config.js'
import { AccessLog, requestId } from './plugins/access-log.js'
import { auth, type TokenSet } from './plugins/auth.js'
import { createHttpEdge } from './plugins/http-edge.js'
import { jsonBody } from './plugins/json-body.js'
import type { Metrics } from './plugins/metrics.js'
import { openapi } from './plugins/openapi.js'
import { processHealth } from './plugins/process-health.js'
import type { Tracing } from './plugins/tracing.js'
import { shutdown } from './plugins/shutdown.js'
import { overload } from './plugins/under-pressure.js'
import type { PlantRepository } from './plants/plant-repository.js'
import { createObservedPlantRepository } from './plants/observed-plant-repository.js'
import { createPlantService } from './plants/plant-service.js'
import { healthRoutes } from './routes/health.js'
import { plantMethodRoutes, plantRoutes } from './routes/plants.js'
import { sharedSchemas } from './schemas.js'
import { validatorCompiler } from './validation.js'

export interface AppOptions {
  /** http and overload default to config.ts's defaults; no rateLimit means none. */
  config: Pick<Config, 'bodyLimit'> &
    Partial<Pick<Config, 'http' | 'overload' | 'rateLimit' | 'corsOrigins' | 'otlpEndpoint' | 'shutdownDelayMs'>>
  tokens: TokenSet
  repository: PlantRepository
  /** The pino logger: main.ts's writes JSON lines to stdout, tests' write to memory. */
  logger: FastifyBaseLogger
  /** Where requests and the store are counted (main.ts serves them on METRICS_PORT); absent: not counted. */
  metrics?: Metrics
}

/** The composition root: plugins in order. Never listens; main.ts does. */
export async function buildApp ({ config, tokens, repository: store, logger, metrics }: AppOptions) {
  const limits = config.http ?? defaultHttpLimits
  let tracing: Tracing | undefined
  if (config.otlpEndpoint !== undefined) {
    // Loaded only when configured: the OpenTelemetry packages cost start time and memory otherwise.
    const { createTracing } = await import('./plugins/tracing.js')
    tracing = createTracing(config.otlpEndpoint)
  }
  // Store failures logged throttled, inserts counted and traced: the one wrapper around any store.
  const repository = createObservedPlantRepository(store, { log: logger, metrics, tracing })
  // Host, Expect, CONNECT, versions, methods, pipelining, CORS and the error replies (plugins/http-edge.ts).
  const edge = await createHttpEdge({ corsOrigins: config.corsOrigins, metrics })
  const options: FastifyHttpOptions<Server> = {
    bodyLimit: config.bodyLimit,
    // Slow or stalled clients are cut off instead of holding a connection (docs/operating.md, "Limits and timeouts").
    connectionTimeout: limits.connectionTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    http: {
      headersTimeout: limits.headersTimeoutMs,
      maxHeaderSize: limits.maxHeaderBytes,
      // Node enforces the two timeouts above only when it checks, every 30 s by default.
      connectionsCheckingInterval: Math.min(1000, Math.ceil(limits.headersTimeoutMs / 4)),
      ...edge.http
    },
    genReqId: requestId,
    requestIdHeader: false,
    // With metrics on, every reply that goes through the hooks is counted when it completes (the
    // access log's completion callback: no onResponse hook per request). Replies that bypass the
    // hooks (a bad URL, malformed HTTP) are counted below where they are made.
    logController: new AccessLog(metrics && ((request, reply, route) => {
      metrics.requests.observe(request.method, route, reply.statusCode, reply.elapsedTime / 1000)
    })),
    // Requests that arrive while closing are served with Connection: close (plugins/shutdown.ts).
    return503OnClosing: false,
    ...edge.options
  }
  const app = Fastify({ ...options, loggerInstance: logger }).withTypeProvider<TypeBoxTypeProvider>()
  app.setValidatorCompiler(validatorCompiler)
  for (const schema of sharedSchemas) app.addSchema(schema)
  // First: its hook is the first of every request, and it sees every route registered after it.
  await app.register(edge.plugin)

  await app.register(shutdown, { delayMs: config.shutdownDelayMs ?? 0 })
  app.addHook('onClose', async () => { await repository.close() })

  // First, so that shed, refused and failed requests are traced too.
  if (tracing !== undefined) await app.register(tracing.plugin)

  if (app.log.level === 'debug' || app.log.level === 'trace') await app.register(processHealth)
  await app.register(overload, { limits: config.overload ?? defaultOverloadLimits() })
  await app.register(jsonBody)
  await app.register(openapi)
  await app.register(healthRoutes, { repository })
  // OPTIONS /plants, outside the auth scope: it needs no token (other methods: the edge's 405).
  await app.register(plantMethodRoutes)
  await app.register(async function protectedRoutes (scope) {
    await scope.register(auth, { tokens })
    if (config.rateLimit !== undefined) {
      // Loaded only when enabled: ioredis and the limiter cost about 90 ms of start-up otherwise.
      const { tokenRateLimit } = await import('./plugins/rate-limit.js')
      await scope.register(tokenRateLimit, { limit: config.rateLimit })
    }
    await scope.register(plantRoutes, { plants: createPlantService(repository) })
  })
  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
