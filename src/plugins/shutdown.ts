import type { Server } from 'node:http'
import { Server as NetServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyInstance {
    /** True from the start of shutdown: /readyz answers 503 and every reply says Connection: close. */
    readonly closing: boolean
    /** Turns a signal (or an unexpected error) into a graceful close (main.ts, through close-with-grace). */
    shutDown: (signal: string | undefined, err?: Error) => Promise<void>
  }
}

/**
 * Closing begins SHUTDOWN_DELAY_MS (`delayMs`) before close() on SIGTERM, so that balancers see /readyz fail
 * while requests are still served. Then open connections get a grace of 500 ms with Connection: close, so
 * that no request already on its way meets a reset.
 */
export const shutdown = fp<{ delayMs: number }>(async function shutdown (app, { delayMs }) {
  let closing = false
  app.decorate('closing', { getter: () => closing })
  app.decorate('shutDown', async (signal: string | undefined, err?: Error) => {
    if (err !== undefined) app.log.error({ err }, 'closing after an unexpected error')
    else if (signal === 'SIGTERM' && delayMs > 0) {
      closing = true
      app.log.info({ signal, delayMs }, 'not ready: serving for SHUTDOWN_DELAY_MS, then closing')
      await sleep(delayMs)
      app.log.info({ signal }, 'closing')
    } else app.log.info({ signal }, 'closing')
    await app.close()
  })
  app.addHook('preClose', async () => {
    closing = true
    // Ends early once every connection has ended, at once when not listening; the timer never holds the process.
    await Promise.race([stopAccepting(app.server), sleep(500, undefined, { ref: false })])
  })
  // Callback style: an async hook costs a promise per request.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
})

/** Stops accepting connections and leaves the open ones alone; resolves once they have all ended. http.Server's close()
 * also resets idle keep-alive connections, on which a request may be on its way: net.Server's only stops accepting. */
export function stopAccepting (server: Server): Promise<void> {
  return new Promise((resolve) => { NetServer.prototype.close.call(server, () => { resolve() }) })
}
