// baseline-raw: the fastest a Node HTTP server that does the same job can be on this machine.
// A bare node:http server: reads the body, JSON.parse, answers the Plant. No validation, no auth,
// no log, no store. Listens on 127.0.0.1:$PORT.
import { createServer } from 'node:http'

const server = createServer((request, response) => {
  if (request.method !== 'POST' || request.url !== '/plants') {
    response.writeHead(404, { 'content-type': 'application/json; charset=utf-8' })
    response.end('{"error":404,"message":"not found"}')
    return
  }
  let body = ''
  request.setEncoding('utf8')
  request.on('data', (chunk) => { body += chunk })
  request.on('end', () => {
    let plant
    try {
      const { name, tag } = JSON.parse(body)
      plant = tag === undefined ? { name } : { name, tag }
    } catch {
      response.writeHead(400, { 'content-type': 'application/json; charset=utf-8' })
      response.end('{"error":400,"message":"body is not valid JSON"}')
      return
    }
    const text = JSON.stringify(plant)
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) })
    response.end(text)
  })
})

server.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? '127.0.0.1')
process.on('SIGTERM', () => server.close(() => process.exit(0)))
