import { setTimeout as sleep } from 'node:timers/promises'
import closeWithGrace from 'close-with-grace'
import pino from 'pino'
import { buildApp } from './app.js'
import { loadConfig } from './config/load-config.js'
import { ConfigError } from './config/config-error.js'
import { createTokenSet } from './plugins/auth.js'
import { createRepository } from './storage.js'
import { watchTokens } from './config/token-reload.js'

async function main (): Promise<void> {
  const config = loadConfig(process.env)
  const { METRICS_PORT: metricsPort, METRICS_HOST: metricsHost, API_TOKENS_FILE: tokensFile } = config
  // Counted only when served: without METRICS_PORT prom-client (about 70 ms of start-up) is not loaded.
  const metrics = metricsPort === undefined ? undefined : (await import('./observability/metrics.js')).createMetrics()

  // JSON lines on stdout, never waited for: a slow reader holds back at most LOG_BUFFER_MAX_BYTES, the lines beyond
  // are dropped and counted. At exit what the reader takes is written, and what a full pipe refuses is lost.
  let exiting = false
  const destination = pino.destination({
    sync: false,
    // Lines are written as they come; with 0, flush() would not wait for the lines held.
    minLength: 1,
    maxLength: config.LOG_BUFFER_MAX_BYTES,
    // One write takes a busy turn's lines (256: a pipe's capacity), as Buffers (typed as strings) that append for free.
    contentMode: 'buffer',
    maxWrite: 65536,
    retryEAGAIN: () => !exiting
  })
  // Prepended: pino's own exit flush, which throws on a full pipe, then finds the destination flushed or destroyed.
  process.prependOnceListener('exit', () => {
    exiting = true
    try { destination.flushSync() } catch { destination.destroy() }
  })
  const write = (line: string) => destination.write(Buffer.from(line) as unknown as string)
  const log = pino({ level: config.LOG_LEVEL }, { write })
  let dropped = 0
  destination.on('drop', () => { dropped++; metrics?.logLineDropped() })
  destination.on('drain', () => {
    if (dropped > 0) log.warn({ dropped }, 'log lines dropped: the log reader fell behind')
    dropped = 0
  })

  const repository = await createRepository({ ...config, log })
  const tokens = createTokenSet(config.tokens)
  const app = await buildApp({ config, tokens, repository, logger: log, metrics })

  // SIGHUP reloads the tokens file (rotation); it must never start a shutdown.
  if (tokensFile !== undefined) watchTokens(tokensFile, tokens, log, metrics?.tokenReload)
  else process.on('SIGHUP', () => log.info('SIGHUP: nothing to reload, the tokens come from API_TOKENS'))
  if (metrics !== undefined && metricsPort !== undefined) {
    const { listenMetrics } = await import('./observability/metrics-listener.js')
    const listener = await listenMetrics(metrics.exposition, metricsHost, metricsPort, log)
    // Closed with the app, after the last request, so that a last scrape still sees them.
    app.addHook('onClose', listener.close)
  }
  closeWithGrace({ delay: config.SHUTDOWN_DELAY_MS + config.SHUTDOWN_TIMEOUT_MS, logger: log, skip: ['SIGHUP'] },
    async ({ signal, err }) => { await app.shutDown(signal, err) })
  // A graceful close waits, a second at most, for the lines still held to be written.
  app.addHook('onClose', async () => {
    await Promise.race([new Promise((resolve) => destination.flush(resolve)), sleep(1000, undefined, { ref: false })])
  })
  await app.listen({ port: config.PORT, host: config.HOST })
}

main().catch((error: unknown) => {
  // One clear line, naming the variable for configuration errors, then exit status 1.
  const reason = error instanceof Error ? error.message : String(error)
  process.stderr.write(`plant-store: ${error instanceof ConfigError ? '' : 'cannot start: '}${reason}\n`)
  process.exit(1)
})
