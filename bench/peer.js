// peer: the same contract written the obvious way, with the same features as the service.
// Fastify 5 with its defaults; NewPlant, Plant and Error as a user writes them from the spec, in
// plain JSON Schema (`string`; `integer` of format `int64`) validated by Fastify's default Ajv;
// @fastify/bearer-auth with the bench's token; Fastify's default request logging at info to stdout
// (pino: a line when a request comes in and one when it completes); prom-client with its default
// metrics and an HTTP request histogram by route and status on METRICS_PORT (0: any free port,
// nothing scrapes it); and a plain `Map` as the store: the same plant again answers 200, another
// plant with a stored id 409, as the service does.
//
// Fastify's default JSON parser reads ids with JSON.parse, so an id past 2^53 is not kept exactly
// (two ids can meet in one key): this is a peer to measure against, not a service.
// Listens on $HOST:$PORT (127.0.0.1:3000 by default).
import { createServer } from 'node:http'
import bearerAuth from '@fastify/bearer-auth'
import Fastify from 'fastify'
import client from 'prom-client'

const tokens = (process.env.API_TOKENS ?? '').split(',').map((t) => t.trim()).filter(Boolean)
if (tokens.length === 0) throw new Error('peer: API_TOKENS must name at least one token')

client.collectDefaultMetrics()
const requests = new client.Histogram({
  name: 'http_request_duration_seconds',
  help: 'Duration of HTTP requests in seconds',
  labelNames: ['method', 'route', 'status_code']
})

const app = Fastify({ logger: { level: process.env.LOG_LEVEL ?? 'info' } })
const plants = new Map()

app.addHook('onResponse', async (request, reply) => {
  requests.observe({ method: request.method, route: request.routeOptions.url ?? 'unknown', status_code: reply.statusCode }, reply.elapsedTime / 1000)
})
app.setErrorHandler((error, request, reply) => {
  const status = error.statusCode ?? 500
  if (status >= 500) request.log.error(error)
  reply.code(status).send({ error: status, message: status >= 500 ? 'internal error' : error.message })
})
app.setNotFoundHandler((request, reply) => {
  reply.code(404).send({ error: 404, message: `Route ${request.method}:${request.url} not found` })
})

await app.register(bearerAuth, {
  keys: new Set(tokens),
  errorResponse: (error) => ({ error: 401, message: error.message })
})

const Plant = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string' }, tag: { type: 'string' } }
}
const NewPlant = {
  type: 'object',
  required: ['id', 'name'],
  properties: { id: { type: 'integer', format: 'int64' }, ...Plant.properties }
}
const ErrorRecord = {
  type: 'object',
  required: ['error', 'message'],
  properties: { error: { type: 'integer', format: 'int32' }, message: { type: 'string' } }
}

const errors = { 400: ErrorRecord, 401: ErrorRecord, 409: ErrorRecord }
app.post('/plants', { schema: { body: NewPlant, response: { 200: Plant, ...errors } } }, async (request, reply) => {
  const { id, name, tag } = request.body
  const plant = tag === undefined ? { name } : { name, tag }
  const stored = plants.get(id)
  if (stored === undefined) {
    plants.set(id, plant)
    return plant
  }
  if (stored.name === plant.name && stored.tag === plant.tag) return stored
  return reply.code(409).send({ error: 409, message: `a plant with id ${id} already exists with another name or tag` })
})

const metrics = createServer(async (req, res) => {
  res.setHeader('content-type', client.register.contentType)
  res.end(await client.register.metrics())
})
metrics.listen(Number(process.env.METRICS_PORT ?? 0), '127.0.0.1')

await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' })
process.on('SIGTERM', () => {
  metrics.close()
  app.close().then(() => process.exit(0), () => process.exit(1))
})
