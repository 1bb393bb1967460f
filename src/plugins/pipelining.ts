import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * Pipelined requests wait for their turn, and a request whose connection is closed by the reply
 * before it is never acted on (RFC 9112 §9.6: after `Connection: close`, no further request on that
 * connection is processed).
 *
 * Node parses every request a client pipelines on one connection and emits each at once; only the
 * replies are queued (a queued ServerResponse has no socket until the one before it has finished).
 * Without this, the request behind a body that fails to parse (Fastify answers that with
 * `Connection: close`) ran anyway: a create was stored while its client saw the connection close
 * with no answer, and no access line said so. So a request whose reply is queued waits, before any
 * hook acts on it, until either its reply gets the socket (the earlier reply kept the connection:
 * go on) or the connection closes (the earlier reply ended it: the request is dropped, unread, and
 * the drop is logged with the request's id, method and route).
 *
 * A request that is not pipelined (every request but the second and later of a pipelined burst)
 * pays two property reads: its reply's socket, and whether that socket can still be written.
 */
export function awaitTurn (request: FastifyRequest, reply: FastifyReply, proceed: () => void): void {
  const response = reply.raw
  // Its reply already owns the connection (light-my-request's injected replies always do)...
  if (response.socket !== null) {
    // ...unless an earlier reply has already ended the connection: Node still parses what the
    // client sent meanwhile (a body the earlier request never read, then this request).
    if (response.socket.writable) proceed()
    else notProcessed(request)
    return
  }
  const socket = request.raw.socket
  const onTurn = () => {
    socket.removeListener('close', onClose)
    proceed()
  }
  const onClose = () => {
    response.removeListener('socket', onTurn)
    notProcessed(request)
  }
  if (socket.destroyed) {
    notProcessed(request)
    return
  }
  response.once('socket', onTurn)
  socket.once('close', onClose)
}

/** The access line of a request that was never processed: no reply was sent, so it has no status. */
function notProcessed (request: FastifyRequest): void {
  request.log.info({ method: request.method, route: request.routeOptions.url, status: null }, 'request not processed: an earlier reply closed its connection')
}
