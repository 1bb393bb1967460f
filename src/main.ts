import closeWithGrace from 'close-with-grace'
import pino from 'pino'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { createLogDestination } from './lib/log-destination.js'
import type { MetricsListener } from './metrics-listener.js'
import { createTokenSet } from './plugins/auth.js'
import { createRepository } from './storage.js'
import { watchTokens } from './token-reload.js'

/** The process (started by server.ts): configuration, store, app, listen, and signals turned into a graceful close. */
async function main (): Promise<void> {
  const config = loadConfig(process.env)
  // JSON lines on stdout, never waited for: beyond LOG_BUFFER_MAX_BYTES lines are dropped (lib/log-destination.ts).
  const destination = createLogDestination(config.logBufferMaxBytes)
  const logger = pino({ level: config.logLevel }, destination.stream)
  destination.onCaughtUp = (dropped) => { logger.warn({ dropped }, 'log lines dropped: the log reader fell behind') }
  const repository = await createRepository({ ...config, log: logger })
  const tokens = createTokenSet(config.tokens)
  // Counted only when served: without METRICS_PORT no request pays for metrics, and prom-client
  // (about 70 ms of start-up) is not loaded.
  const metrics = config.metrics === undefined ? undefined : (await import('./plugins/metrics.js')).createMetrics()
  if (metrics !== undefined) destination.onDrop = metrics.logLinesDropped
  const app = await buildApp({ config, tokens, repository, logger, ...(metrics === undefined ? {} : { metrics }) })

  // SIGHUP reloads the tokens file (rotation); it must never start a shutdown.
  if (config.tokensFile === undefined) {
    process.on('SIGHUP', () => app.log.info('SIGHUP: nothing to reload, the tokens come from API_TOKENS'))
  } else {
    const onReload = metrics === undefined ? {} : { onReload: metrics.tokenReload }
    const stopWatching = watchTokens({ file: config.tokensFile, tokens, log: app.log, ...onReload })
    app.addHook('onClose', async () => stopWatching())
  }
  // Signals and unexpected errors become a graceful close, bounded (plugins/shutdown.ts; SIGHUP: above).
  closeWithGrace({ delay: config.shutdownDelayMs + config.shutdownTimeoutMs, logger: app.log, skip: ['SIGHUP'] },
    async ({ signal, err }) => { await app.shutDown(signal, err) })
  // The metrics listener closes with the app, after the last request (so a last scrape still sees them).
  let metricsListener: MetricsListener | undefined
  app.addHook('onClose', async () => { await metricsListener?.close() })
  if (metrics !== undefined && config.metrics !== undefined) {
    const { listenMetrics } = await import('./metrics-listener.js')
    const { host, port } = config.metrics
    metricsListener = await listenMetrics({ registry: metrics.exposition, host, port, log: app.log })
  }
  await app.listen({ port: config.port, host: config.host })
}

main().catch((error: unknown) => {
  // One clear line, naming the variable for configuration errors, then exit status 1.
  const reason = error instanceof Error ? error.message : String(error)
  const message = error instanceof ConfigError ? error.message : `cannot start: ${reason}`
  process.stderr.write(`plant-store: ${message}\n`)
  process.exit(1)
})
