import closeWithGrace from 'close-with-grace'
import pino from 'pino'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { TurnBatchedDestination } from './lib/log-destination.js'
import { createTokenSet } from './plugins/auth.js'
import { createRepository } from './storage.js'
import { watchTokens } from './token-reload.js'

/** The process: configuration, store, app, listen, and signals turned into a graceful close. */
async function main (): Promise<void> {
  const config = loadConfig(process.env)
  // JSON lines on stdout, each event-loop turn's lines in one write (lib/log-destination.ts).
  const logger = pino({ level: config.logLevel }, new TurnBatchedDestination(1))
  // Store failures are logged throttled, by the store's wrapper, not per request (README, Logs).
  const repository = await createRepository({ ...config, log: logger })
  const tokens = createTokenSet(config.tokens)
  const app = await buildApp({ config, tokens, repository, logger })

  // SIGHUP reloads the tokens file (rotation); it must never start a shutdown.
  if (config.tokensFile === undefined) {
    process.on('SIGHUP', () => app.log.info('SIGHUP: nothing to reload, the tokens come from API_TOKENS'))
  } else {
    const stopWatching = watchTokens({ file: config.tokensFile, tokens, log: app.log })
    app.addHook('onClose', async () => stopWatching())
  }
  closeWithGrace({ delay: config.shutdownTimeoutMs, logger: app.log, skip: ['SIGHUP'] }, async ({ signal, err }) => {
    if (err !== undefined) app.log.error({ err }, 'closing after an unexpected error')
    else app.log.info({ signal }, 'closing')
    await app.close()
  })
  await app.listen({ port: config.port, host: config.host })
}

main().catch((error: unknown) => {
  // One clear line, naming the variable for configuration errors, then exit status 1.
  const message = error instanceof ConfigError ? error.message : `cannot start: ${error instanceof Error ? error.message : String(error)}`
  process.stderr.write(`plant-store: ${message}\n`)
  process.exit(1)
})
