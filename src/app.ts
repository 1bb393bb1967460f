import Fastify, { type FastifyBaseLogger } from 'fastify'
import type { Config } from './config/load-config.js'
import { AccessLog } from './observability/access-log.js'
import { auth, type TokenSet } from './plugins/auth.js'
import { edgeOptions, httpEdge } from './plugins/http-edge.js'
import { jsonBody } from './plugins/json-body.js'
import type { Metrics } from './observability/metrics.js'
import { openapi } from './plugins/openapi.js'
import { shutdown } from './plugins/shutdown.js'
import { overload } from './plugins/overload.js'
import type { PlantRepository } from './plants/plant-repository.js'
import { createObservedPlantRepository } from './observability/observed-plant-repository.js'
import { createPlantService } from './plants/plant-service.js'
import { healthRoutes } from './routes/health.js'
import { plantRoutes } from './routes/plants.js'
import { sharedSchemas } from './schemas.js'
import { validatorCompiler } from './validation.js'

export interface AppOptions {
  config: Config
  tokens: TokenSet
  repository: PlantRepository
  /** The pino logger: main.ts's writes JSON lines to stdout, tests' write to memory. */
  logger: FastifyBaseLogger
  /** Where requests and the store are counted (main.ts serves them on METRICS_PORT); absent: not counted. */
  metrics?: Metrics | undefined
}

/** The composition root: plugins in order. Never listens; main.ts does. */
export async function buildApp ({ config, tokens, repository: store, logger, metrics }: AppOptions) {
  // Loaded only when configured: the OpenTelemetry packages cost start time and memory otherwise.
  const tracing = config.OTEL_EXPORTER_OTLP_ENDPOINT === undefined
    ? undefined
    : (await import('./observability/tracing.js')).createTracing(config.OTEL_EXPORTER_OTLP_ENDPOINT)
  // Store failures logged throttled, inserts counted and traced: the one wrapper around any store.
  const repository = createObservedPlantRepository(store, logger, metrics, tracing)
  const accessLog = new AccessLog(metrics)
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: config.BODY_LIMIT,
    // Slow or stalled clients are cut off instead of holding a connection (docs/operating.md).
    connectionTimeout: config.CONNECTION_TIMEOUT_MS,
    keepAliveTimeout: config.KEEP_ALIVE_TIMEOUT_MS,
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    http: {
      headersTimeout: config.HEADERS_TIMEOUT_MS,
      maxHeaderSize: config.MAX_HEADER_BYTES,
      // Node enforces the two timeouts above only when it checks, every 30 s by default.
      connectionsCheckingInterval: Math.min(1000, Math.ceil(config.HEADERS_TIMEOUT_MS / 4)),
      // A missing Host is answered by the edge, with the Error record.
      requireHostHeader: false
    },
    logController: accessLog,
    // Requests that arrive while closing are served with Connection: close (plugins/shutdown.ts).
    return503OnClosing: false,
    ...edgeOptions(accessLog)
  })
  app.setValidatorCompiler(validatorCompiler)
  for (const schema of sharedSchemas) app.addSchema(schema)

  // First, so that requests the edge refuses, shed and failed ones are traced too.
  if (tracing !== undefined) await app.register(tracing.plugin)
  await app.register(httpEdge, { corsOrigins: config.corsOrigins })
  await app.register(shutdown, { delayMs: config.SHUTDOWN_DELAY_MS })
  app.addHook('onClose', async () => { await repository.close() })
  await app.register(overload, config)
  await app.register(jsonBody, { bodyLimit: config.BODY_LIMIT })
  await app.register(openapi)
  await app.register(healthRoutes, { repository })
  await app.register(async function authenticatedRoutes (scope) {
    await scope.register(auth, { tokens })
    if (config.RATE_LIMIT_PER_MINUTE > 0) {
      // Loaded only when enabled: ioredis and the limiter cost about 90 ms of start-up otherwise.
      await scope.register((await import('./plugins/rate-limit.js')).tokenRateLimit, config)
    }
    await scope.register(plantRoutes, { plants: createPlantService(repository) })
  })
  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
