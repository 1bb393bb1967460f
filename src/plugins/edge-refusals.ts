import type { IncomingMessage } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  ConnectRefusedError, DuplicateAuthorizationError, DuplicateHostError, ExpectationFailedError, InvalidHostError,
  methodNotAllowed, MissingHostError, VersionNotSupportedError
} from '../errors.js'

/**
 * What the HTTP edge refuses about a request itself, in its first hook, before anything acts on it
 * (plugins/http-edge.ts): each refusal is an Error record from the app, with the request id.
 */

/**
 * A Host field value (RFC 9112 §3.2, RFC 3986 §3.2.2): `uri-host [":" port]`, the host an IP literal
 * in brackets or a reg-name (IPv4 addresses are reg-names too), which may be empty. No userinfo, no
 * space: `Host: a b@c` is refused. Two Host headers are joined by Node into `a, b`, never valid (the
 * joining space), and told apart by counting the raw lines.
 */
export const HOST = /^(?:\[(?:[0-9A-Fa-f:.]+|[vV][0-9A-Fa-f]+\.[\w\-.~!$&'()*+,;=:]+)\]|(?:[\w\-.~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?$/

/** How many raw header lines the request carries under `name` (lower-case). */
export function headerLines (request: IncomingMessage, name: string): number {
  const lines = request.rawHeaders
  let count = 0
  for (let i = 0; i < lines.length; i += 2) if ((lines[i] as string).toLowerCase() === name) count++
  return count
}

/**
 * Whether every member of an Expect field value is `100-continue` (RFC 9110 §10.1.1, a list;
 * case-insensitive). Node met `Expect: 100-continue, foo` as if it were `100-continue` alone.
 */
export function onlyContinue (expect: string): boolean {
  for (const member of expect.split(',')) if (member.trim().toLowerCase() !== '100-continue') return false
  return true
}

/**
 * Node answers an HTTP/1.1 Expect other than 100-continue with a bare 417 before any hook runs (and
 * so before the token is checked) unless someone listens to `checkExpectation`, and writes `100
 * Continue` for any Expect that merely mentions 100-continue unless someone listens to
 * `checkContinue`. Here both reach Fastify's router like any other request: an Expect of
 * 100-continue alone gets its 100 Continue at once (as Node did); any other is answered 417 by the
 * app as an Error record (unmetExpectation), after auth on the routes that need a token.
 */
export function routeExpectations (app: FastifyInstance): void {
  app.server.on('checkContinue', (request: IncomingMessage, response) => {
    if (onlyContinue(request.headers.expect as string)) response.writeContinue()
    app.routing(request, response)
  })
  app.server.on('checkExpectation', (request: IncomingMessage, response) => { app.routing(request, response) })
}

/**
 * The 417 for a request whose Expect has a member other than 100-continue, in any HTTP/1.x version
 * (RFC 9110 §10.1.1; an HTTP/1.0 100-continue is ignored, as the RFC says), or undefined.
 */
export function unmetExpectation (request: FastifyRequest): FastifyError | undefined {
  const expect = request.headers.expect
  return expect !== undefined && !onlyContinue(expect) ? new ExpectationFailedError(expect.slice(0, 100)) : undefined
}

/** The methods a path answers to, and its Allow header. */
export interface Allowed { methods: ReadonlySet<string>, allow: string }

/**
 * The methods each path answers to, from the routes as they are registered (an onRoute hook), in
 * the order they were registered, OPTIONS last. Fastify adds HEAD beside GET. Keyed by the route's
 * URL as written: a request's path finds its route's methods when the route is a static path (a
 * parametric or wildcard URL is never a request's path, so it is never found).
 */
export function collectAllowedMethods (app: FastifyInstance): ReadonlyMap<string, Allowed> {
  const allowed = new Map<string, Allowed>()
  app.addHook('onRoute', ({ method, url }) => {
    const methods = new Set([...allowed.get(url)?.methods ?? [], ...[method].flat()])
    const list = [...methods]
    allowed.set(url, { methods, allow: [...list.filter((one) => one !== 'OPTIONS'), ...list.filter((one) => one === 'OPTIONS')].join(', ') })
  })
  return allowed
}

/** The 505 for a request line that is not HTTP/1.x, or undefined; the connection then closes. */
export function versionNotSupported (request: FastifyRequest, reply: FastifyReply): FastifyError | undefined {
  if (request.raw.httpVersionMajor === 1) return undefined
  reply.header('connection', 'close')
  return new VersionNotSupportedError(`HTTP/${request.raw.httpVersion}`)
}

/**
 * What the first hook refuses, in this order, or undefined (a pipelined request is refused only
 * once its turn comes: plugins/pipelining.ts):
 * - a request line whose version is not HTTP/1.x (`HTTP/2.0` in cleartext, `HTTP/0.9`): 505, and the
 *   connection closes (versions Node's parser refuses are answered 505 by errors.ts's clientErrorHandler);
 * - CONNECT: 400 (this service is no proxy, and the target of a CONNECT is an authority, not one of
 *   its resources, so there is no resource whose methods a 405 could list);
 * - an HTTP/1.1 request without Host, with two Host headers, or with one that is not `host[:port]`:
 *   400 (RFC 9112 §3.2; HTTP/1.0 may omit it);
 * - a method a path does not answer (the request met no route, but the path has routes): 405 with
 *   `Allow` listing every method the path answers (RFC 9110 §15.5.6), before any body is read;
 * - an unmet Expect on a route that needs no token: 417. On the routes behind auth,
 *   `request.client` is null, not undefined (auth decorates only its own scope), and auth answers
 *   the 417 once the token is accepted.
 */
export function refusedAtTheEdge (request: FastifyRequest, reply: FastifyReply, allowed: ReadonlyMap<string, Allowed>): FastifyError | undefined {
  const raw = request.raw
  const version = versionNotSupported(request, reply)
  if (version !== undefined) return version
  const method = request.method
  if (method === 'CONNECT') return new ConnectRefusedError()
  const host = request.headers.host
  if (host === undefined) {
    if (raw.httpVersionMinor >= 1) return new MissingHostError()
  } else if (!HOST.test(host)) {
    const lines = headerLines(raw, 'host')
    return lines > 1 ? new DuplicateHostError(lines) : new InvalidHostError(host.slice(0, 100))
  }
  // A request that met no route; or an OPTIONS that met CORS's catch-all and is no preflight (a
  // preflight, with Access-Control-Request-Method, is the CORS policy's to answer).
  if (request.is404 || (method === 'OPTIONS' && request.headers['access-control-request-method'] === undefined)) {
    const path = request.url.split('?', 1)[0] as string
    const known = allowed.get(path)
    if (known !== undefined && !known.methods.has(method)) return methodNotAllowed(request, reply, path, known.allow)
  }
  return request.client === undefined ? unmetExpectation(request) : undefined
}

/**
 * The 400 for a request that carries more than one Authorization header, or undefined. RFC 6750
 * §3.1 calls a request that repeats its credentials `invalid_request`, answered with 400, and the
 * challenge says so. Counted in the raw header lines: only when the (joined) header failed, so a
 * request with one header pays nothing.
 */
export function duplicateAuthorization (request: FastifyRequest): FastifyError | undefined {
  const count = headerLines(request.raw, 'authorization')
  return count > 1
    ? Object.assign(new DuplicateAuthorizationError(count), { headers: { 'www-authenticate': 'Bearer realm="plants", error="invalid_request"' } })
    : undefined
}
