// Feature ladder for `npm run bench -- --targets baseline-fastify,ladder-1,…,ladder-7,memory`:
// what each feature of the service costs, measured as baseline-fastify plus the service's own
// modules (from dist/), one feature more per step. Step N includes every step below it:
//   1  the int64 JSON parser (plugins/json-body) and TypeBox validation (validation.js) instead of
//      Fastify's parser and Ajv
//   2  the store: the handler goes through the plant service into the memory repository
//   3  a pino logger with the service's lazy request loggers and AccessLog, at warn: the logging
//      machinery without writing a line
//   4  the same at info: one access line per request, through pino.destination, as main.ts sets it
//   5  bearer auth (plugins/auth: @fastify/bearer-auth, SHA-256 digests)
//   6  request ids, the security headers, the shutdown onSend hook, @fastify/under-pressure
//   7  Prometheus metrics (plugins/metrics: the request histogram, counted in AccessLog's completion
//      callback as app.ts does; plants/observed-plant-repository), as with METRICS_PORT set, nothing scraping
// The `memory` target is step 7 plus the rest of the real service (timeouts, error handlers,
// health routes, OpenAPI). Listens on 127.0.0.1:$PORT; STEP selects the step.
import Fastify from 'fastify'
import pino from 'pino'
import { Type } from '@sinclair/typebox'
import { defaultOverloadLimits } from '../dist/config.js'
import { createMemoryPlantRepository } from '../dist/plants/memory-plant-repository.js'
import { createObservedPlantRepository } from '../dist/plants/observed-plant-repository.js'
import { createPlantService } from '../dist/plants/plant-service.js'
import { AccessLog, requestId } from '../dist/plugins/access-log.js'
import { auth, createTokenSet } from '../dist/plugins/auth.js'
import { createMetrics } from '../dist/plugins/metrics.js'
import { jsonBody } from '../dist/plugins/json-body.js'
import { overload } from '../dist/plugins/under-pressure.js'
import { NewPlant, Plant, sharedSchemas } from '../dist/schemas.js'
import { validatorCompiler } from '../dist/validation.js'

// What plugins/http-edge.ts sets on every reply as a request begins (its own hook is not exported).
function setSecurityHeaders (reply) {
  reply.header('x-content-type-options', 'nosniff')
  reply.header('cache-control', 'no-store')
}

const step = Number(process.env.STEP)
if (!(step >= 1 && step <= 7)) throw new Error('feature-ladder: STEP must be 1 to 7')

const metrics = step >= 7 ? createMetrics() : undefined
const options = { logger: false }
if (step >= 3) {
  options.logger = undefined
  options.loggerInstance = pino({ level: step >= 4 ? 'info' : 'warn' }, pino.destination({ sync: false, minLength: 1, maxLength: 16 * 1024 * 1024 }))
  options.logController = new AccessLog(metrics === undefined
    ? undefined
    : (request, reply, route) => { metrics.requests.observe(request.method, route, reply.statusCode, reply.elapsedTime / 1000) })
}
if (step >= 6) Object.assign(options, { genReqId: requestId, requestIdHeader: false })
const app = Fastify(options)

app.setValidatorCompiler(validatorCompiler)
for (const schema of sharedSchemas) app.addSchema(schema)
await app.register(jsonBody)
if (step >= 6) {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    setSecurityHeaders(reply)
    done()
  })
  app.addHook('onSend', (_request, _reply, payload, done) => { done(null, payload) })
  // MAX_EVENT_LOOP_DELAY_MS as the service reads it (bench/instructions.js raises it under valgrind).
  const limits = defaultOverloadLimits()
  if (process.env.MAX_EVENT_LOOP_DELAY_MS !== undefined) limits.maxEventLoopDelayMs = Number(process.env.MAX_EVENT_LOOP_DELAY_MS)
  await app.register(overload, { limits })
}

const store = createMemoryPlantRepository({ maxPlants: 16_000_000 })
const observed = createObservedPlantRepository(store, { log: { warn () {}, info () {} }, metrics })
const plants = createPlantService(metrics === undefined ? store : observed)
const schema = { body: Type.Ref(NewPlant), response: { 200: Type.Ref(Plant) } }
await app.register(async (scope) => {
  if (step >= 5) await scope.register(auth, { tokens: createTokenSet([process.env.API_TOKENS ?? '']) })
  scope.post('/plants', { schema }, step >= 2
    ? (request) => plants.create(request.body)
    : async (request) => {
      const { name, tag } = request.body
      return tag === undefined ? { name } : { name, tag }
    })
})

await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' })
process.on('SIGTERM', () => { app.close().then(() => process.exit(0), () => process.exit(1)) })
