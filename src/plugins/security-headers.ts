import type { FastifyInstance, FastifyReply } from 'fastify'
import fp from 'fastify-plugin'

/**
 * Browsers must not guess a content type (nosniff), and no cache may keep a reply (they answer
 * writes and carry per-client outcomes). The Swagger UI's static files set their own
 * cache-control, which is kept. Fastify sends no Server or X-Powered-By banner.
 */
export function setSecurityHeaders (reply: FastifyReply): void {
  reply.header('x-content-type-options', 'nosniff')
  if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store')
}

/** The headers on every reply that goes through Fastify's hooks (app.ts covers frameworkErrors). */
export const securityHeaders = fp(async function securityHeaders (app: FastifyInstance) {
  app.addHook('onSend', (_request, reply, payload, done) => {
    setSecurityHeaders(reply)
    done(null, payload)
  })
}, { name: 'security-headers' })
