import cors, { type FastifyCorsOptions } from '@fastify/cors'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

/** What a page may read beyond the safelisted headers, so that it can read every Error record's context. */
const EXPOSED_HEADERS = 'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, ' +
  'www-authenticate, allow, accept-encoding'

/**
 * Cross-origin access for `origins` (CORS_ORIGINS: exact origins, or ['*'] for any) through @fastify/cors,
 * its plugin registered before the overload check and auth: a preflight from a listed origin is answered
 * 204 with no token; every other reply to a listed origin carries the CORS headers; anything else gets
 * none, only `Vary: Origin`. No credentials mode: the token travels in Authorization, which a page sets itself.
 */
export function corsPolicy (origins: readonly string[]) {
  const any = origins.includes('*')
  const listed = new Set(origins)
  const base: FastifyCorsOptions = {
    // Any: the literal `*`; listed: the request's own Origin, reflected once it is known to be listed.
    origin: any ? '*' : true,
    methods: 'POST',
    // What a page may send: listed, not reflected, and Authorization by name (a `*` would not cover it).
    allowedHeaders: 'authorization, content-type, content-encoding, x-request-id',
    exposedHeaders: EXPOSED_HEADERS,
    // How long a browser may reuse a preflight's answer (Chromium caps it at 7200).
    maxAge: 600,
    credentials: false
  }
  // `preflight` acts only on an OPTIONS (@fastify/cors checks the method itself).
  const off: FastifyCorsOptions = { origin: false }
  const simple: FastifyCorsOptions = { ...base, preflight: false }
  const preflight: FastifyCorsOptions = { ...base, preflight: true }
  const plugin = fp(async function corsPolicy (app: FastifyInstance) {
    await app.register(cors, {
      delegator: (request, callback) => {
        const origin = request.headers.origin
        if (origin === undefined || !(any || listed.has(origin))) callback(null, off)
        else callback(null, request.headers['access-control-request-method'] !== undefined ? preflight : simple)
      }
    })
  }, { name: 'cors-policy' })

  /**
   * The same policy's headers for an error reply that @fastify/cors's hook never saw (a bad URL, a
   * refusal of the edge's first hook). Left alone when the hook has run (Vary then has Origin).
   */
  const headersOfErrors = (request: FastifyRequest, reply: FastifyReply): void => {
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
  return { plugin, headersOfErrors }
}
