import cors, { type FastifyCorsOptions } from '@fastify/cors'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

export interface CorsPolicyOptions {
  /** Exact origins, or ['*'] for any (config.ts, CORS_ORIGINS). */
  origins: readonly string[]
}

/** How long a browser may reuse a preflight's answer (Chromium caps it at 7200). */
export const CORS_MAX_AGE_SECONDS = 600

/**
 * What a page may send: the token, the JSON type, a compressed body, its own request id. Listed,
 * not reflected from the preflight, and Authorization by name (a `*` would not cover it).
 */
const ALLOWED_HEADERS = 'authorization, content-type, content-encoding, x-request-id'

/**
 * What a page may read beyond the CORS-safelisted headers: the request id, when to retry (503,
 * 429), the rate limit's count (plugins/rate-limit.ts, IETF draft names), the 401 challenge, the
 * 405's Allow and the 415's Accept-Encoding.
 */
const EXPOSED_HEADERS = 'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, www-authenticate, allow, accept-encoding'

/**
 * Cross-origin access for the listed origins (@fastify/cors), registered at the root before the
 * overload check and auth, so that:
 * - a preflight (OPTIONS with Origin and Access-Control-Request-Method) from a listed origin is
 *   answered 204 in onRequest: no token, no rate limit, not shed;
 * - every other reply to a listed origin, errors included (401, 400, 405, 413, 429, 503, ...), carries
 *   Access-Control-Allow-Origin and the exposed headers, or the page could not read the Error record;
 * - a request with no Origin, or an unlisted one, gets no CORS header at all, and an OPTIONS that is
 *   not a preflight reaches its route (OPTIONS /plants: 204 with Allow).
 * Every reply carries `Vary: Origin`: it depends on the Origin header. No credentials mode: the
 * token travels in Authorization, which a page sets itself, and no cookie is used.
 */
export const corsPolicy = fp(async function corsPolicy (app: FastifyInstance, { origins }: CorsPolicyOptions) {
  const any = origins.includes('*')
  const listed = new Set(origins)
  const base: FastifyCorsOptions = {
    // Any: the literal `*`; listed: the request's own Origin, reflected once it is known to be listed.
    origin: any ? '*' : true,
    methods: 'POST',
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: CORS_MAX_AGE_SECONDS,
    credentials: false
  }
  // Made once: the delegator picks one of three per request. `preflight` acts only on an OPTIONS
  // (@fastify/cors checks the method itself), so a request with Access-Control-Request-Method is
  // given it whatever its method.
  const off: FastifyCorsOptions = { origin: false }
  const simple: FastifyCorsOptions = { ...base, preflight: false }
  const preflight: FastifyCorsOptions = { ...base, preflight: true }
  await app.register(cors, {
    delegator: (request, callback) => {
      const origin = request.headers.origin
      if (origin === undefined || !(any || listed.has(origin))) callback(null, off)
      else callback(null, request.headers['access-control-request-method'] !== undefined ? preflight : simple)
    }
  })
}, { name: 'cors-policy' })

/**
 * The same policy's headers for an error reply that @fastify/cors's hook never saw: an error found
 * before routing (frameworkErrors: a bad URL), or a request refused by the first hook, before the
 * CORS hook runs (a missing Host, an unmet Expect: app.ts). Left alone when the hook has run: it set
 * Access-Control-Allow-Origin, or, for an unlisted origin, Vary alone (so Vary gets Origin once).
 */
export function corsHeadersOfErrors (origins: readonly string[]): (request: FastifyRequest, reply: FastifyReply) => void {
  const any = origins.includes('*')
  const listed = new Set(origins)
  return (request, reply) => {
    if (reply.hasHeader('access-control-allow-origin')) return
    const vary = reply.getHeader('vary')
    if (vary === undefined) reply.header('vary', 'Origin')
    else if (!/(?:^|,)\s*origin\s*(?:,|$)/i.test(String(vary))) reply.header('vary', `${String(vary)}, Origin`)
    else return
    const origin = request.headers.origin
    if (origin === undefined || !(any || listed.has(origin))) return
    reply.header('access-control-allow-origin', any ? '*' : origin)
    reply.header('access-control-expose-headers', EXPOSED_HEADERS)
  }
}
