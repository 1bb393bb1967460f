import fastifyCors from '@fastify/cors'
import fp from 'fastify-plugin'

/**
 * Cross-origin access for CORS_ORIGINS (exact origins, or `*` alone) through @fastify/cors. Its hook
 * runs before auth, so a preflight needs no token and every reply to a listed origin carries the
 * headers, the Error records too. No credentials mode: a page sends the token in Authorization itself.
 */
export const cors = fp<{ origins: readonly string[] }>(async function cors (app, { origins }) {
  await app.register(fastifyCors, {
    // A list that holds `*` allows any origin.
    origin: [...origins],
    methods: 'POST',
    allowedHeaders: 'authorization, content-type, content-encoding, x-request-id',
    // So that a page can read every Error record's context.
    exposedHeaders: 'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, ' +
      'www-authenticate, allow, accept-encoding',
    maxAge: 600,
    // An OPTIONS without Access-Control-Request-Method gets the same 204, not a plain-text 400.
    strictPreflight: false
  })
}, { name: 'cors' })
