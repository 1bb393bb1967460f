import { AsyncLocalStorage } from 'node:async_hooks'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { SpanStatusCode, propagation, type Context } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import fp from 'fastify-plugin'
import type { InsertOutcome } from '../plants/plant-repository.js'

// @fastify/otel reads the caller's traceparent through the global propagator; it holds no state, so
// every app of the process may share it. The tracer provider, which does, stays per app.
propagation.setGlobalPropagator(new W3CTraceContextPropagator())

/** Through @fastify/otel, as OTLP/HTTP: a SERVER span per request, named `POST /plants` (the method alone without
 * a route), its parent the caller's valid `traceparent`, whose sampling decision is kept. */
export function createTracing (endpoint: string) {
  // The OpenTelemetry rule for OTEL_EXPORTER_OTLP_ENDPOINT: the signal's path appended to the base URL.
  const url = new URL('v1/traces', endpoint.endsWith('/') ? endpoint : `${endpoint}/`).href
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'plant-store' }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }) })]
  })
  const instrumentation = new FastifyOtelInstrumentation({
    instrumentHooks: false,
    instrumentHandler: false,
    requestHook: (span, { method, routeOptions: { url } }) => span.updateName(url ? `${method} ${url}` : method)
  })
  instrumentation.setTracerProvider(provider)
  // The request's span while its handler runs, for the store's span (null: OTEL_FASTIFY_IGNORE_PATHS skipped it).
  const active = new AsyncLocalStorage<Context | null>()

  return {
    plugin: fp(async function tracing (app) {
      await app.register(instrumentation.plugin())
      app.addHook('preHandler', (request, _reply, done) => { active.run(request.opentelemetry().context, done) })
      // After the last request: what is still buffered is sent before the process exits.
      app.addHook('onClose', async () => { await provider.shutdown() })
    }),
    /** A child span of the request's span for a store insert; the returned function ends it. */
    startInsert () {
      const parent = active.getStore()
      if (parent == null) return undefined
      const span = provider.getTracer('plant-store').startSpan('plant_store insert', {}, parent)
      return (outcome: InsertOutcome | 'error' | 'unknown', error?: unknown): void => {
        if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) })
        span.setAttribute('plant_store.outcome', outcome).end()
      }
    }
  }
}

export type Tracing = ReturnType<typeof createTracing>
