import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

export interface DrainOptions {
  /** How long keep-alive connections may still bring a request after close() begins. */
  graceMs: number
}

/**
 * Closes keep-alive connections without resetting requests. Node's server.close() destroys every
 * connection that is idle at that instant, and "idle" includes a connection whose next request is
 * already on the wire but not yet read: that client gets ECONNRESET (measured: under load from 50
 * keep-alive connections, about one reset per connection). So the idle close is deferred by a
 * short grace: meanwhile the listener is closed (new connections are refused), requests on open
 * connections are served with Connection: close (app.ts), after which Node ends those connections
 * itself, and what is still idle after the grace had nothing to send.
 */
export const drain = fp(async function drain (app: FastifyInstance, { graceMs }: DrainOptions) {
  app.addHook('preClose', (done) => {
    const server = app.server
    if (server.listening) {
      const closeIdle = server.closeIdleConnections.bind(server)
      server.closeIdleConnections = () => {
        // Unref'd: open connections keep the process alive anyway, and without any there is nothing to close.
        setTimeout(closeIdle, graceMs).unref()
      }
    }
    done()
  })
}, { name: 'drain' })
