import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

export interface ProcessHealthOptions {
  intervalMs: number
}

const ms = (nanoseconds: number): number => Math.round(nanoseconds / 1e4) / 100

/**
 * At debug level only, one log line per interval with the event-loop delay (p50, p99, max over the
 * interval), RSS and heap: what the soak script (scripts/soak.mjs) reads to tell a leak or a
 * stalling loop, without a route of its own. At info and above this plugin is not registered.
 */
async function processHealthPlugin (app: FastifyInstance, { intervalMs }: ProcessHealthOptions) {
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
  }, intervalMs)
  timer.unref()
  app.addHook('onClose', async () => {
    clearInterval(timer)
    histogram.disable()
  })
}

export const processHealth = fp(processHealthPlugin, { name: 'process-health' })
