import type { FastifyReply } from 'fastify'

/**
 * Browsers must not guess a content type (nosniff), and no cache may keep a reply (they answer
 * writes and carry per-client outcomes). Fastify sends no Server or X-Powered-By banner.
 *
 * Set when a request begins (app.ts's onRequest hook; frameworkErrors for errors before routing)
 * rather than in an onSend hook: one hook fewer per request, and whatever comes later still
 * decides: the Swagger UI's static files set their own cache-control, which replaces this one.
 */
export function setSecurityHeaders (reply: FastifyReply): void {
  reply.header('x-content-type-options', 'nosniff')
  reply.header('cache-control', 'no-store')
}
