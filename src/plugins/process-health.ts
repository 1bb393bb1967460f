import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

const ms = (nanoseconds: number): number => Math.round(nanoseconds / 1e4) / 100

/**
 * At debug level only, every 5 s one log line with the event-loop delay (p50, p99, max over the
 * interval), RSS and heap: what the soak script (scripts/soak.mjs) reads to tell a leak or a
 * stalling loop, without a route of its own. At info and above this plugin is not registered.
 */
export const processHealth = fp(async function processHealth (app: FastifyInstance) {
  const histogram = monitorEventLoopDelay({ resolution: 10 })
  histogram.enable()
  const timer = setInterval(() => {
    const memory = process.memoryUsage()
    app.log.debug({
      loopDelayMs: { p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max) },
      rssBytes: memory.rss,
      heapUsedBytes: memory.heapUsed
    }, 'process health')
    histogram.reset()
  }, 5000).unref()
  app.addHook('onClose', async () => {
    clearInterval(timer)
    histogram.disable()
  })
}, { name: 'process-health' })
