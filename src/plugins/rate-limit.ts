import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { Redis } from 'ioredis'
import type { RateLimitConfig } from '../config.js'
import { RateLimitedError } from '../errors.js'
import { createFailureLog } from '../lib/failure-log.js'
import { tokenRateLimitKey } from './auth.js'

export interface TokenRateLimitOptions {
  limit: RateLimitConfig
  /** How long the start waits for Redis before it goes on without it (fail-open). */
  redisConnectTimeoutMs?: number
}

const BEARER = 'bearer '

/**
 * The counter's key: the client's, set by auth when it accepted the token (it runs first). For a
 * named client `client:<name>`: the count follows the client (the name the access line shows), also
 * when its token is rotated under the same name; for an unnamed token a digest of the token, never
 * the token (auth.ts, tokenRateLimitKey), computed when the tokens are loaded, not per request.
 * Either is the same on every replica, so they share one count. Without a client (never after auth):
 * the digest of the header's token, read as @fastify/bearer-auth reads it (after the scheme, trimmed).
 */
export function rateLimitKey (request: FastifyRequest): string {
  return request.client?.rateLimitKey ?? tokenRateLimitKey((request.headers.authorization ?? '').slice(BEARER.length).trim())
}

/**
 * A per-client limit (per token for an unnamed one) on every route of the scope it is registered in,
 * after auth (its onRequest hook is a route hook, which runs after the scope's auth hook): 429 Error
 * record with Retry-After and the RateLimit-Limit/-Remaining/-Reset headers of the IETF draft.
 *
 * With a Redis URL the count is shared by every replica. When Redis is unreachable the limit fails
 * open (skipOnError): requests are served uncounted and a warning is logged, because the limit is
 * about fairness between callers, and authentication still applies; an outage of a helper must not
 * become an outage of the service.
 */
export const tokenRateLimit = fp(async function tokenRateLimit (app: FastifyInstance, { limit, redisConnectTimeoutMs = 2000 }: TokenRateLimitOptions) {
  let redis: Redis | undefined
  if (limit.redisUrl !== undefined) {
    redis = await connectRedis(app, limit.redisUrl, redisConnectTimeoutMs)
    const client = redis
    app.addHook('onClose', async () => {
      await client.quit().catch(() => client.disconnect())
    })
  }
  await app.register(rateLimit, {
    max: limit.perMinute,
    timeWindow: 60000,
    keyGenerator: rateLimitKey,
    enableDraftSpec: true,
    skipOnError: true,
    ...(redis === undefined ? {} : { redis, nameSpace: 'plant-store:rate-limit:' }),
    errorResponseBuilder: (_request, context) => new RateLimitedError(context.max, Math.ceil(context.ttl / 1000))
  })
}, { name: 'token-rate-limit' })

async function connectRedis (app: FastifyInstance, url: string, timeoutMs: number): Promise<Redis> {
  const redis = new Redis(url, {
    // Fail fast while Redis is away instead of queueing commands (and requests) behind it.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: timeoutMs,
    lazyConnect: true
  })
  // Without a listener, an 'error' event would crash the process. ioredis keeps reconnecting (at
  // most every 2 s); its errors are logged at most once per second per kind, with their count, and
  // once when Redis is back (lib/failure-log.ts). Commands fail at once meanwhile (no offline queue)
  // and the limiter skips them, so no request logs anything of its own.
  const failures = createFailureLog({ log: app.log, subject: 'rate limit store (Redis)', counted: 'errors', effect: 'requests are served without a limit' })
  redis.on('error', (err: Error & { code?: string }) => {
    failures.failed(err.code === 'ECONNREFUSED' ? 'refused' : 'down', 'connection', err)
  })
  redis.on('ready', () => failures.recovered())
  app.addHook('onClose', async () => failures.close())
  const connected = redis.connect().then(() => true, () => false)
  const timedOut = new Promise<false>((resolve) => setTimeout(resolve, timeoutMs, false).unref())
  if (!await Promise.race([connected, timedOut])) {
    app.log.warn('rate limit store (Redis) not reachable at start; starting without it, requests are served without a limit until it is')
  }
  return redis
}
