import underPressure from '@fastify/under-pressure'
import fp from 'fastify-plugin'
import type { Config } from '../config/load-config.js'
import { OverloadedError } from '../errors.js'
import { residentAnonymousBytes } from '../config/memory-limit.js'

type OverloadOptions = Pick<Config, 'MAX_EVENT_LOOP_DELAY_MS' | 'MAX_HEAP_USED_BYTES' | 'MAX_RSS_BYTES' |
  'MAX_RSS_ANON_BYTES'> & { sampleIntervalMs?: number, rssAnonBytes?: () => number }

/**
 * Sheds requests before auth, body or store with a 503 while the event loop or memory is over its limit. /readyz is
 * shed too, to tell the balancer; /livez is not, or a busy process would be killed. Tests pass their own
 * `rssAnonBytes` (resident anonymous memory, config/memory-limit.ts) and a shorter `sampleIntervalMs` than 1 s.
 */
export const overload = fp<OverloadOptions>(async function overload (app, options) {
  const { sampleIntervalMs = 1000, rssAnonBytes = residentAnonymousBytes } = options
  // One error for every shed request, as under-pressure does: no stack captured per request.
  const overloaded = new OverloadedError()
  let lastLogged = 0
  await app.register(underPressure, {
    // Resident anonymous memory, not RSS (MAX_RSS_BYTES), which also counts Node's own mapped binary.
    ...(options.MAX_RSS_ANON_BYTES > 0 && {
      healthCheck: async () => rssAnonBytes() < options.MAX_RSS_ANON_BYTES, healthCheckInterval: sampleIntervalMs
    }),
    maxEventLoopDelay: options.MAX_EVENT_LOOP_DELAY_MS,
    maxHeapUsedBytes: options.MAX_HEAP_USED_BYTES,
    maxRssBytes: options.MAX_RSS_BYTES,
    sampleInterval: sampleIntervalMs,
    pressureHandler: (request, _reply, type, value) => {
      if (request.routeOptions.url === '/livez') return undefined
      // Once per sample interval, not per request: logging is what a shed request would spend most on.
      if (Date.now() - lastLogged >= sampleIntervalMs) {
        lastLogged = Date.now()
        // The health check (resident anonymous memory) hands no value.
        const pressure = type === 'healthCheck' ? 'rssAnonBytes' : type
        request.log.warn({ pressure, value: value ?? rssAnonBytes() }, 'overloaded: shedding requests with 503')
      }
      // A rejected promise is how under-pressure hands an error to Fastify's error handler, which adds
      // Retry-After: 1, the sample interval (1 s), after which the pressure is measured again.
      return Promise.reject(overloaded)
    }
  })
})
