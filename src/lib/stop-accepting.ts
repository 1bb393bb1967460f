import type { Server } from 'node:http'
import { Server as NetServer } from 'node:net'

/**
 * Stops accepting connections and leaves the open ones alone; resolves once they have all ended.
 * http.Server's close() also destroys idle keep-alive connections at once, which resets a request
 * already on its way on one of them; the close() of net.Server, which http.Server extends, does not.
 * This reaches past http's own close on purpose: test/lib/stop-accepting.test.ts fails when Node changes it.
 */
export function stopAccepting (server: Server): Promise<void> {
  return new Promise((resolve) => { NetServer.prototype.close.call(server, () => { resolve() }) })
}
