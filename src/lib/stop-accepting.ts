import type { Server } from 'node:http'
import { Server as NetServer } from 'node:net'

/**
 * Stops accepting connections and leaves the open ones alone; resolves once they have all ended.
 * test/lib/stop-accepting.test.ts fails when Node changes what this relies on.
 */
export function stopAccepting (server: Server): Promise<void> {
  // http.Server's close() also resets idle keep-alive connections, on which a request may be on its way:
  // the close() it overrides, net.Server's, only stops accepting.
  return new Promise((resolve) => { NetServer.prototype.close.call(server, () => { resolve() }) })
}
