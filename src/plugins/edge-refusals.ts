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
export const HOST = /^(?:\[(?:[0-9A-Fa-f:.]+|v[0-9A-Fa-f]+\.[\w\-.~!$&'()*+,;=:]+)\]|(?:[\w\-.~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?$/

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

/** Requests whose Expect is not met, routed by routeExpectations; answered 417 (unmetExpectation). */
const unmetExpectations = new WeakSet<IncomingMessage>()

/**
 * Node answers an Expect other than 100-continue with a bare 417 before any hook runs (and so
 * before the token is checked) unless someone listens to `checkExpectation`, and writes `100
 * Continue` for any Expect that merely mentions 100-continue unless someone listens to
 * `checkContinue`. Here both reach Fastify's router like any other request: a met expectation gets
 * its 100 Continue at once (as Node did), an unmet one is remembered, so that the 417 comes from the
 * app as an Error record, after auth on the routes that need a token.
 */
export function routeExpectations (app: FastifyInstance): void {
  app.server.on('checkContinue', (request: IncomingMessage, response) => {
    if (onlyContinue(request.headers.expect as string)) response.writeContinue()
    else unmetExpectations.add(request)
    app.routing(request, response)
  })
  app.server.on('checkExpectation', (request: IncomingMessage, response) => {
    unmetExpectations.add(request)
    app.routing(request, response)
  })
}

/** The 417 for a request whose expectation is not met, or undefined. */
export function unmetExpectation (request: FastifyRequest): FastifyError | undefined {
  const expect = request.headers.expect
  return expect !== undefined && unmetExpectations.has(request.raw) ? new ExpectationFailedError(expect.slice(0, 100)) : undefined
}

/**
 * The methods each path answers to, from the routes as they are registered (an onRoute hook), in
 * the order they were registered, OPTIONS last; static paths only. Fastify adds HEAD beside GET.
 */
export function collectAllowedMethods (app: FastifyInstance): ReadonlyMap<string, string> {
  const methods = new Map<string, string[]>()
  const allowed = new Map<string, string>()
  app.addHook('onRoute', ({ method, url }) => {
    if (url.includes('*') || url.includes(':')) return
    const list = methods.get(url) ?? []
    for (const one of typeof method === 'string' ? [method] : method) if (!list.includes(one)) list.push(one)
    methods.set(url, list)
    allowed.set(url, [...list.filter((one) => one !== 'OPTIONS'), ...list.filter((one) => one === 'OPTIONS')].join(', '))
  })
  return allowed
}

/**
 * What the first hook refuses, in this order, or undefined:
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
export function refusedAtTheEdge (request: FastifyRequest, reply: FastifyReply, allowed: ReadonlyMap<string, string>): FastifyError | undefined {
  const raw = request.raw
  if (raw.httpVersionMajor !== 1) {
    reply.header('connection', 'close')
    return new VersionNotSupportedError(`HTTP/${raw.httpVersion}`)
  }
  if (raw.method === 'CONNECT') return new ConnectRefusedError()
  const host = request.headers.host
  if (host === undefined) {
    if (raw.httpVersionMinor >= 1) return new MissingHostError()
  } else if (!HOST.test(host)) {
    const lines = headerLines(raw, 'host')
    return lines > 1 ? new DuplicateHostError(lines) : new InvalidHostError(host.slice(0, 100))
  }
  if (request.is404) {
    const path = request.url.split('?', 1)[0] as string
    const allow = allowed.get(path)
    if (allow !== undefined) return methodNotAllowed(request, reply, path, allow)
  }
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
  const count = headerLines(request.raw, 'authorization')
  return count > 1
    ? Object.assign(new DuplicateAuthorizationError(count), { headers: { 'www-authenticate': 'Bearer realm="plants", error="invalid_request"' } })
    : undefined
}
