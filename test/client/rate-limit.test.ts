import { describe, expect, it } from 'vitest'
import { startServer } from '../e2e/server-process.js'
import { clientOf } from './built-service.js'
import { byBody, recordingFetch, statusCounts } from './recorder.js'

// plant-store-client against the built service (dist/: `npm run build` first), with a rate limit
// (RATE_LIMIT_PER_MINUTE) that the clients run into: about a minute, the limit's window.

describe('plant-store-client against a rate limit', () => {
  it(
    'rate limit: with RATE_LIMIT_PER_MINUTE=20, 4 clients create 40 plants; no retry comes sooner than the Retry-After it answers, and every create resolves',
    { timeout: 180000 }, async () => {
      const server = await startServer({ RATE_LIMIT_PER_MINUTE: '20' })
      const { fetch, exchanges } = recordingFetch()
      // A rate limit's Retry-After is up to a minute: the cap and the deadline must allow for it.
      const retry = { maxRetryAfterMs: 61000, deadlineMs: 150000 }
      await Promise.all(Array.from({ length: 4 }, async (_, c) => {
        const client = clientOf(server, { fetch, retry })
        for (let n = c; n < 40; n += 4) expect(await client.create({ id: n, name: `plant ${n}` })).toEqual({ name: `plant ${n}` })
      }))
      const limited = exchanges.filter((exchange) => exchange.status === 429)
      expect(limited.length).toBeGreaterThanOrEqual(4)
      for (const attempts of byBody(exchanges).values()) {
        attempts.slice(1).forEach((retried, i) => {
          const answered = attempts[i]
          if (answered?.status !== 429) return
          expect(Number(answered.retryAfter)).toBeGreaterThan(0)
          expect(retried.sentAt - answered.endedAt).toBeGreaterThanOrEqual(Number(answered.retryAfter) * 1000)
        })
      }
      expect(statusCounts(exchanges)['200']).toBe(40)
    })
})
