import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyBaseLogger } from 'fastify'
import type { Registry } from 'prom-client'
import { clientErrorHandler, errorRecord } from './errors.js'

export interface MetricsListenerOptions {
  registry: Registry
  /** METRICS_HOST and METRICS_PORT (0 picks a free port). */
  host: string
  port: number
  log: FastifyBaseLogger
}

export interface MetricsListener {
  /** Where GET /metrics answers, e.g. http://127.0.0.1:9464/metrics. */
  url: string
  close (): Promise<void>
}

/**
 * The second listener, apart from the API: `GET /metrics` in the Prometheus text format, without a
 * token (like every exporter, it relies on the network to keep it private: docs/observability.md, "Metrics").
 * Anything else is a 404 Error record. A bare node:http server: a scrape every few seconds
 * needs no framework, and the API's hooks, auth and access log stay out of it.
 */
export async function listenMetrics ({ registry, host, port, log }: MetricsListenerOptions): Promise<MetricsListener> {
  const server = createServer({ headersTimeout: 10000, requestTimeout: 15000 }, (request, response) => {
    const path = (request.url ?? '/').split('?', 1)[0] ?? '/'
    if (request.method !== 'GET' || path !== '/metrics') {
      send(response, 404, JSON.stringify(errorRecord(404, `no route for ${request.method ?? ''} ${path.slice(0, 200)}`)))
      return
    }
    registry.metrics().then((text) => {
      response.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' })
      response.end(text)
    }, (error: unknown) => {
      log.error({ err: error }, 'metrics scrape failed')
      send(response, 500, JSON.stringify(errorRecord(500, 'internal server error')))
    })
  })
  server.on('clientError', clientErrorHandler)
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(new Error(`METRICS_PORT: cannot listen on ${host}:${port}: ${error.code ?? error.message}`, { cause: error }))
    })
    server.listen({ port, host }, () => {
      server.removeAllListeners('error')
      resolve()
    })
  })
  const address = server.address() as AddressInfo
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}/metrics`
  log.info({ url }, `Metrics listening at ${url}`)
  return {
    url,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve())
      // A scraper's idle keep-alive connection must not hold the exit back.
      server.closeAllConnections()
    })
  }
}

function send (response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff'
  })
  response.end(body)
}
