import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { Redis } from 'ioredis'
import type { Config } from '../config/load-config.js'
import { RateLimitedError } from '../errors.js'
import { createFailureLog } from '../observability/failure-log.js'

type RateLimit = Pick<Config, 'RATE_LIMIT_PER_MINUTE' | 'REDIS_URL'>

/**
 * A per-client limit after auth, shared by the replicas through Redis. While Redis is unreachable the
 * limit fails open: an outage of a helper must not become one of the service.
 */
export const tokenRateLimit = fp<RateLimit>(async function tokenRateLimit (app, limit) {
  await app.register(rateLimit, {
    max: limit.RATE_LIMIT_PER_MINUTE,
    timeWindow: 60000,
    // The client's key (plugins/auth.ts), the same on every replica: a named client keeps its count across a
    // token rotation. The limiter's hook is the route's, so auth's, the scope's, has set the client already.
    keyGenerator: (request) => request.client?.rateLimitKey ?? '',
    enableDraftSpec: true,
    skipOnError: true,
    ...(limit.REDIS_URL !== undefined && { redis: await connectRedis(app, limit.REDIS_URL) }),
    nameSpace: 'plant-store:rate-limit:',
    errorResponseBuilder: (_request, context) => new RateLimitedError(context.max, Math.ceil(context.ttl / 1000))
  })
})

/** Waits for Redis at start until it answers or fails once (connectTimeout), then goes on without it. */
async function connectRedis (app: FastifyInstance, url: string): Promise<Redis> {
  // Fail fast while Redis is away instead of queueing commands (and requests) behind it.
  const options = { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, lazyConnect: true }
  const redis = new Redis(url, options)
  const failures = createFailureLog({
    log: app.log, subject: 'rate limit store (Redis)', effect: 'requests are served without a limit'
  })
  // Without a listener ioredis writes each error's stack to stderr. One kind: the line's cause carries the code.
  redis.on('error', (err) => { failures.failed('down', 'connection', err) })
  redis.on('ready', () => failures.recovered())
  app.addHook('onClose', async () => { await redis.quit().catch(() => redis.disconnect()) })
  // A failure is logged by the 'error' listener above.
  await redis.connect().catch(() => {})
  return redis
}
