// baseline-fastify: a bare Fastify route with the service's TypeBox schemas (validated by Fastify's
// default Ajv, serialized by fast-json-stringify), and nothing else: no auth, no log lines
// (`logger: false`), no store, Fastify's own JSON parser. Listens on 127.0.0.1:$PORT.
import Fastify from 'fastify'
import { NewPlant, Plant } from '../dist/schemas.js'

const app = Fastify({ logger: false })

app.post('/plants', { schema: { body: NewPlant, response: { 200: Plant } } }, async (request) => {
  const { name, tag } = request.body
  if (process.env.SPIN) { const end = process.hrtime.bigint() + BigInt(process.env.SPIN); while (process.hrtime.bigint() < end); }
  return tag === undefined ? { name } : { name, tag }
})

await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' })
process.on('SIGTERM', () => { app.close().then(() => process.exit(0), () => process.exit(1)) })
