import { collectDefaultMetrics, Counter, Registry } from 'prom-client'
import { HotHistogram, type HistogramChild } from '../lib/hot-metrics.js'

/** Seconds: from 0.5 ms (a request served from memory) to 10 s (past every timeout). */
export const HTTP_DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/** `http_route` of a request that matched no route (404s, bad URLs, malformed HTTP): never the raw path. */
export const UNMATCHED_ROUTE = 'unmatched'

/**
 * Methods kept as they are on unmatched requests; any other becomes `_OTHER`, as the OpenTelemetry
 * HTTP conventions say. (A matched request's method is one its route declares.)
 */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH', '_OTHER'])

/**
 * http_server_request_duration_seconds, by method, route template and status. A child per label
 * set, found through maps keyed by the strings and number Fastify already holds (route, then
 * method, then status): no label string is built and nothing is hashed per request.
 */
export class RequestMetrics {
  readonly #histogram: HotHistogram
  readonly #children = new Map<string, Map<string, Map<number, HistogramChild>>>()

  constructor (registry: Registry) {
    this.#histogram = new HotHistogram({
      name: 'http_server_request_duration_seconds',
      help: 'Duration of HTTP server requests, from the request\'s arrival to the end of its reply, in seconds. Every reply counts.',
      labelNames: ['http_request_method', 'http_route', 'http_response_status_code'],
      buckets: HTTP_DURATION_BUCKETS,
      registry
    })
  }

  /** `route` is the matched route's template, or undefined when none matched. */
  observe (method: string, route: string | undefined, status: number, seconds: number): void {
    let byMethod = this.#children.get(route ?? UNMATCHED_ROUTE)
    if (byMethod === undefined) this.#children.set(route ?? UNMATCHED_ROUTE, byMethod = new Map())
    let byStatus = byMethod.get(method)
    if (byStatus === undefined) {
      // Only an unmatched request's method can be anything Node's parser accepts: bound it.
      if (route === undefined && !KNOWN_METHODS.has(method)) {
        this.observe('_OTHER', route, status, seconds)
        return
      }
      byMethod.set(method, byStatus = new Map())
    }
    let child = byStatus.get(status)
    if (child === undefined) {
      byStatus.set(status, child = this.#histogram.child({
        http_request_method: method,
        http_route: route ?? UNMATCHED_ROUTE,
        http_response_status_code: String(status)
      }))
    }
    child.observe(seconds)
  }
}

/** Everything the service exports, in a Registry of its own (never prom-client's global one). */
export interface Metrics {
  registry: Registry
  requests: RequestMetrics
  /** Counts a reload of API_TOKENS_FILE: taken, or refused (the previous tokens stay). */
  tokenReload (taken: boolean): void
  /** Counts log lines dropped because the log reader fell behind (lib/log-destination.ts). */
  logLinesDropped (lines: number): void
}

export function createMetrics (): Metrics {
  const registry = new Registry()
  // process_resident_memory_bytes, process_cpu_seconds_total, nodejs_eventloop_lag_*, nodejs_gc_duration_seconds, nodejs_heap_*.
  collectDefaultMetrics({ register: registry })
  // Gauges that prom-client names like counters (promtool: "non-counter metrics should not have
  // _total suffix"); nodejs_active_handles, _requests and _resources, by type, remain: sum them.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name)
  const reloads = new Counter({
    name: 'plant_store_token_reloads_total',
    help: 'Reloads of API_TOKENS_FILE (SIGHUP or a change of the file): ok, or refused (the previous tokens stay accepted).',
    labelNames: ['result'],
    registers: [registry]
  })
  const ok = reloads.labels('ok')
  const refused = reloads.labels('refused')
  // Exported as 0 from the start, so that increase() sees the first reload.
  ok.inc(0)
  refused.inc(0)
  const dropped = new Counter({
    name: 'plant_store_log_lines_dropped_total',
    help: 'Log lines dropped because the log reader (stdout) fell behind by more than LOG_BUFFER_MAX_BYTES.',
    registers: [registry]
  })
  return {
    registry,
    logLinesDropped: (lines) => { dropped.inc(lines) },
    requests: new RequestMetrics(registry),
    tokenReload: (taken) => (taken ? ok : refused).inc()
  }
}
