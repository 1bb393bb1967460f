import type { IncomingMessage, ServerOptions } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify'
import { DuplicateAuthorizationError, ExpectationFailedError, MissingHostError } from '../errors.js'

/**
 * What Node's HTTP server would otherwise answer by itself, before the app sees the request, with
 * a bare reply (no Error record, no request id): these requests go through the app instead, which
 * answers them with the Error record like any other.
 *
 * - `requireHostHeader: false`: Node's own 400 for an HTTP/1.1 request without Host is an empty
 *   body; the app answers it instead (refusedAtTheEdge below, RFC 9112 §3.2).
 * - `joinDuplicateHeaders: true`: a header sent twice is combined into one comma-separated value
 *   (RFC 9110 §5.3) instead of Node keeping the first and dropping the rest, so a request never acts
 *   on half of what it carries. Two Authorization headers then never match a token (a token has no
 *   comma or space), and auth refuses them (duplicateAuthorization below) at no cost to a request
 *   that carries one.
 */
export const EDGE_HTTP_OPTIONS: Pick<ServerOptions, 'requireHostHeader' | 'joinDuplicateHeaders'> = {
  requireHostHeader: false,
  joinDuplicateHeaders: true
}

/** Requests whose Expect Node found unmet (anything but 100-continue), routed by routeUnmetExpectations. */
const unmetExpectations = new WeakSet<IncomingMessage>()

/**
 * Node answers an Expect other than 100-continue with a bare 417 before any hook runs, and so
 * before the token is checked, unless someone listens to `checkExpectation`. Here the request is
 * handed to Fastify's router like any other and remembered, so that the 417 comes from the app, as
 * an Error record, after auth on the routes that need a token (unmetExpectation).
 */
export function routeUnmetExpectations (app: FastifyInstance): void {
  app.server.on('checkExpectation', (request: IncomingMessage, response) => {
    unmetExpectations.add(request)
    app.routing(request, response)
  })
}

/** The 417 for a request whose expectation Node found unmet, or undefined. */
export function unmetExpectation (request: FastifyRequest): FastifyError | undefined {
  const expect = request.headers.expect
  return expect !== undefined && unmetExpectations.has(request.raw) ? new ExpectationFailedError(expect.slice(0, 100)) : undefined
}

/**
 * What the first hook refuses about a request itself, before anything acts on it: an HTTP/1.1
 * request without Host (400; HTTP/1.0 has no Host), and an unmet Expect on a route that needs no
 * token (417). On the routes behind auth, `request.client` is null, not undefined (auth decorates
 * only its own scope), and auth answers the 417 once the token is accepted.
 */
export function refusedAtTheEdge (request: FastifyRequest): FastifyError | undefined {
  if (request.headers.host === undefined && request.raw.httpVersionMajor === 1 && request.raw.httpVersionMinor >= 1) return new MissingHostError()
  if (request.headers.expect !== undefined && request.client === undefined) return unmetExpectation(request)
  return undefined
}

/**
 * The 400 for a request that carries more than one Authorization header, or undefined. RFC 6750
 * §3.1 calls a request that repeats its credentials `invalid_request`, answered with 400, and the
 * challenge says so. Counted in the raw header lines: only when the (joined) header failed, so a
 * request with one header pays nothing.
 */
export function duplicateAuthorization (request: FastifyRequest): FastifyError | undefined {
  const lines = request.raw.rawHeaders
  let count = 0
  for (let i = 0; i < lines.length; i += 2) if ((lines[i] as string).toLowerCase() === 'authorization') count++
  return count > 1
    ? Object.assign(new DuplicateAuthorizationError(count), { headers: { 'www-authenticate': 'Bearer realm="plants", error="invalid_request"' } })
    : undefined
}
