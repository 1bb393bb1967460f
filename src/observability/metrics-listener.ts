import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyBaseLogger } from 'fastify'
import type { Registry } from 'prom-client'
import { errorRecordReply, clientErrorHandler } from '../plugins/http-edge.js'

/**
 * `GET /metrics` on METRICS_HOST:METRICS_PORT, without a token (like every exporter: docs/observability.md), from
 * a bare node:http server: a scrape needs no framework, and the API's hooks and access log stay out.
 */
export async function listenMetrics (registry: Pick<Registry, 'metrics' | 'contentType'>, host: string, port: number,
  log: FastifyBaseLogger) {
  const server = createServer({ headersTimeout: 10000, requestTimeout: 15000 }, (request, response) => {
    const path = (request.url ?? '/').replace(/\?.*/s, '')
    if (request.method !== 'GET' || path !== '/metrics') {
      const { body, headers } = errorRecordReply(404, `no route for ${request.method ?? ''} ${path.slice(0, 200)}`)
      response.writeHead(404, headers).end(body)
      return
    }
    registry.metrics().then((text) => {
      response.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(text)
    }, (error: unknown) => {
      log.error({ err: error }, 'metrics scrape failed')
      const { body, headers } = errorRecordReply(500, 'internal server error')
      response.writeHead(500, headers).end(body)
    })
  })
  server.on('clientError', clientErrorHandler)
  await once(server.listen({ port, host }), 'listening').catch((error: NodeJS.ErrnoException) => {
    throw new Error(`METRICS_PORT: cannot listen on ${host}:${port}: ${error.code ?? String(error)}`, { cause: error })
  })
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${(server.address() as AddressInfo).port}/metrics`
  log.info({ url }, `Metrics listening at ${url}`)
  // close() also ends a scraper's idle keep-alive connection, which must not hold the exit back.
  return { url, close: async (): Promise<void> => { await once(server.close(), 'close') } }
}
