import underPressure from '@fastify/under-pressure'
import fp from 'fastify-plugin'
import type { Config } from '../config/load-config.js'
import { OverloadedError } from '../errors.js'
import { residentAnonymousBytes } from '../lib/memory-limit.js'

/**
 * Sheds requests before auth, body or store with a 503 while the event loop or memory is over its
 * limit. /readyz is shed too, to tell the balancer; /livez is not, or a busy process would be killed.
 * `rssAnonBytes` reads the resident anonymous memory (lib/memory-limit.ts); tests pass their own.
 */
export const overload = fp<{ limits: Config['overload'], rssAnonBytes?: () => number }>(async function overload (
  app, { limits, rssAnonBytes = residentAnonymousBytes }) {
  // One error for every shed request, as under-pressure does: no stack captured per request.
  const overloaded = new OverloadedError()
  let lastLogged = 0
  await app.register(underPressure, {
    // Resident anonymous memory, not RSS (MAX_RSS_BYTES), which also counts Node's own mapped binary.
    ...(limits.maxRssAnonBytes > 0 && {
      healthCheck: async () => rssAnonBytes() < limits.maxRssAnonBytes, healthCheckInterval: limits.sampleIntervalMs
    }),
    maxEventLoopDelay: limits.maxEventLoopDelayMs,
    maxHeapUsedBytes: limits.maxHeapUsedBytes,
    maxRssBytes: limits.maxRssBytes,
    sampleInterval: limits.sampleIntervalMs,
    pressureHandler: (request, _reply, type, value) => {
      if (request.routeOptions.url === '/livez') return undefined
      // Once per sample interval, not per request: logging is what a shed request would spend most on.
      if (Date.now() - lastLogged >= limits.sampleIntervalMs) {
        lastLogged = Date.now()
        // The health check (resident anonymous memory) hands no value.
        const pressure = type === 'healthCheck' ? 'rssAnonBytes' : type
        request.log.warn({ pressure, value: value ?? rssAnonBytes() }, 'overloaded: shedding requests with 503')
      }
      // A rejected promise is how under-pressure hands an error to Fastify's error handler, which adds
      // Retry-After: 1, the sample interval (config/load-config.ts), after which the pressure is measured again.
      return Promise.reject(overloaded)
    }
  })
})
