import { AsyncLocalStorage } from 'node:async_hooks'
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, defaultTextMapGetter, trace, type Span } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { InsertOutcome } from '../plants/plant-repository.js'

/** The resource's service.name: what a tracing backend lists the spans under. */
export const SERVICE_NAME = 'plant-store'

/** The OpenTelemetry rule for OTEL_EXPORTER_OTLP_ENDPOINT: the signal's path appended to the base URL. */
export function tracesUrl (endpoint: string): string {
  return new URL('v1/traces', endpoint.endsWith('/') ? endpoint : `${endpoint}/`).href
}

/**
 * OpenTelemetry tracing, exported as OTLP/HTTP (JSON), loaded only when OTEL_EXPORTER_OTLP_ENDPOINT is
 * set (app.ts). Nothing is registered globally, so apps in one process never share state. Spans follow
 * the HTTP conventions: a SERVER span `POST /plants` (the method alone without a route), its parent the
 * caller's valid `traceparent`, whose sampling decision is kept.
 */
export function createTracing (endpoint: string) {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': SERVICE_NAME }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: tracesUrl(endpoint) }) })]
  })
  const tracer = provider.getTracer(SERVICE_NAME)
  const propagator = new W3CTraceContextPropagator()
  const spans = new WeakMap<FastifyRequest, Span>()
  // The request's span while its handler runs, so that the store's span finds its parent.
  const active = new AsyncLocalStorage<Span>()
  const end = (request: FastifyRequest, fn: (span: Span) => void): void => {
    const span = spans.get(request)
    if (span === undefined) return
    spans.delete(request)
    fn(span)
    span.end()
  }

  const plugin = fp(async function tracing (app: FastifyInstance) {
    app.addHook('onRequest', (request, _reply, done) => {
      const parent = propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter)
      const attributes = { 'http.request.method': request.method }
      spans.set(request, tracer.startSpan(request.method, { kind: SpanKind.SERVER, attributes }, parent))
      done()
    })
    app.addHook('preHandler', (request, _reply, done) => {
      const span = spans.get(request)
      if (span === undefined) done()
      else active.run(span, done)
    })
    app.addHook('onResponse', (request, reply, done) => {
      end(request, (span) => {
        const route = request.routeOptions.url
        if (route !== undefined) {
          span.updateName(`${request.method} ${route}`)
          span.setAttribute('http.route', route)
        }
        span.setAttribute('http.response.status_code', reply.statusCode)
        if (reply.statusCode >= 500) {
          span.setAttribute('error.type', String(reply.statusCode))
          span.setStatus({ code: SpanStatusCode.ERROR })
        }
      })
      done()
    })
    app.addHook('onRequestAbort', (request, done) => {
      end(request, (span) => {
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'the client closed the connection before the reply' })
      })
      done()
    })
    // After the last request: what is still buffered is sent before the process exits.
    app.addHook('onClose', async () => { await provider.shutdown() })
  }, { name: 'tracing' })

  return {
    plugin,
    /** A child span of the request's span for a store insert; the returned function ends it. */
    startInsert () {
      const parent = active.getStore()
      if (parent === undefined) return undefined
      const context = trace.setSpan(ROOT_CONTEXT, parent)
      const span = tracer.startSpan('plant_store insert', { kind: SpanKind.INTERNAL }, context)
      return (outcome: InsertOutcome | 'error', error?: unknown): void => {
        span.setAttribute('plant_store.outcome', outcome)
        const message = error instanceof Error ? error.message : String(error)
        if (outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR, message })
        span.end()
      }
    }
  }
}

export type Tracing = ReturnType<typeof createTracing>
