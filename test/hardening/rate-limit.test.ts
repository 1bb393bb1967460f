import { spawn, spawnSync } from 'node:child_process'
import { createHash, randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { describe, expect, it, onTestFinished } from 'vitest'
import { createTokenSet, tokenRateLimitKey } from '../../src/plugins/auth.js'
import { buildTestApp, freePort, postPlant, until } from '../helpers.js'

const REDIS_URL = process.env.TEST_REDIS_URL
const REDIS_SKIP = REDIS_URL === undefined ? ' (SKIPPED: set TEST_REDIS_URL, e.g. redis://127.0.0.1:6379)' : ''

// Said once per run, so the skip cannot pass unnoticed (CI sets TEST_REDIS_URL).
if (REDIS_URL === undefined) console.warn('rate-limit.test.ts: the Redis test is SKIPPED because TEST_REDIS_URL is not set')

const HAS_REDIS_SERVER = spawnSync('redis-server', ['--version']).status === 0

const json = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' })

describe('per-token rate limit, per process', () => {
  it('answers 429 Error with Retry-After and RateLimit headers once a token is over its limit', async () => {
    const app = await buildTestApp({ tokens: ['token-a'], config: { RATE_LIMIT_PER_MINUTE: 3 } })
    const remaining: (string | number | string[] | undefined)[] = []
    for (let id = 1; id <= 3; id++) {
      const res = await postPlant(app, { id, name: 'fern' }, json('token-a'))
      expect(res.statusCode).toBe(200)
      expect(res.headers['ratelimit-limit']).toBe('3')
      remaining.push(res.headers['ratelimit-remaining'])
    }
    expect(remaining).toEqual(['2', '1', '0'])

    const res = await postPlant(app, { id: 4, name: 'fern' }, json('token-a'))
    expect(res.statusCode).toBe(429)
    const retryAfter = Number(res.headers['retry-after'])
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(res.headers['ratelimit-limit']).toBe('3')
    expect(res.headers['ratelimit-remaining']).toBe('0')
    expect(res.headers['ratelimit-reset']).toBe(String(retryAfter))
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.json()).toEqual({ error: 429, message: `too many requests with this token: at most 3 per minute, retry in ${retryAfter} s` })
  })

  it('counts each token on its own', async () => {
    const app = await buildTestApp({ tokens: ['token-a', 'token-b'], config: { RATE_LIMIT_PER_MINUTE: 1 } })
    expect((await postPlant(app, { id: 1, name: 'fern' }, json('token-a'))).statusCode).toBe(200)
    expect((await postPlant(app, { id: 2, name: 'fern' }, json('token-a'))).statusCode).toBe(429)
    expect((await postPlant(app, { id: 3, name: 'fern' }, json('token-b'))).statusCode).toBe(200)
  })

  it('checks the token first: requests without a valid token get 401 and do not use up the limit', async () => {
    const app = await buildTestApp({ tokens: ['token-a'], config: { RATE_LIMIT_PER_MINUTE: 1 } })
    for (let i = 0; i < 3; i++) {
      expect((await postPlant(app, { id: 1, name: 'fern' }, json('wrong-token'))).statusCode).toBe(401)
    }
    expect((await postPlant(app, { id: 1, name: 'fern' }, json('token-a'))).statusCode).toBe(200)
  })

  it('has no limit when RATE_LIMIT_PER_MINUTE is not set (no RateLimit headers)', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, { id: 1, name: 'fern' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['ratelimit-limit']).toBeUndefined()
  })

  it('keys the count of an unnamed token by a digest of the token, never the token; a named client by client:<name>', () => {
    const key = createTokenSet(['token-a']).identify('token-a')?.rateLimitKey
    expect(key).toBe(tokenRateLimitKey('token-a'))
    expect(key).not.toContain('token-a')
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(tokenRateLimitKey('token-b')).not.toBe(key)
    expect(createTokenSet([{ name: 'billing', token: 'token-a' }]).identify('token-a')?.rateLimitKey).toBe('client:billing')
  })

  it('counts per client name: a named client keeps its count when its token is rotated under the same name', async () => {
    const tokenSet = createTokenSet([{ name: 'billing', token: 'billing-old' }, { name: 'shop', token: 'shop-token' }])
    const app = await buildTestApp({ tokenSet, config: { RATE_LIMIT_PER_MINUTE: 2 } })
    expect((await postPlant(app, { id: 1, name: 'fern' }, json('billing-old'))).statusCode).toBe(200)
    tokenSet.replace([{ name: 'billing', token: 'billing-new' }, { name: 'shop', token: 'shop-token' }])
    const second = await postPlant(app, { id: 2, name: 'fern' }, json('billing-new'))
    expect(second.statusCode).toBe(200)
    expect(second.headers['ratelimit-remaining']).toBe('0')
    expect((await postPlant(app, { id: 3, name: 'fern' }, json('billing-new'))).statusCode).toBe(429)
    // Another client has its own count.
    expect((await postPlant(app, { id: 4, name: 'fern' }, json('shop-token'))).statusCode).toBe(200)
  })

  it('counts a client listed by its SHA-256 under its name, apart from other tokens', async () => {
    const digest = createHash('sha256').update('hashed-token').digest('hex')
    const app = await buildTestApp({ tokens: [{ name: 'billing', sha256: digest }, 'token-b'], config: { RATE_LIMIT_PER_MINUTE: 1 } })
    expect((await postPlant(app, { id: 1, name: 'fern' }, json('hashed-token'))).statusCode).toBe(200)
    expect((await postPlant(app, { id: 2, name: 'fern' }, json('hashed-token'))).statusCode).toBe(429)
    expect((await postPlant(app, { id: 3, name: 'fern' }, json('token-b'))).statusCode).toBe(200)
  })

  it('fails open when Redis is unreachable: starts, serves, never a 5xx', async () => {
    const lines: string[] = []
    // Nothing listens on port 1.
    const app = await buildTestApp({ logLines: lines, config: { RATE_LIMIT_PER_MINUTE: 1, REDIS_URL: 'redis://127.0.0.1:1' } })
    for (let id = 1; id <= 3; id++) {
      expect((await postPlant(app, { id, name: 'fern' })).statusCode).toBe(200)
    }
    expect(lines).toContainEqual(expect.stringContaining('rate limit store (Redis)'))
  })
})

describe('per-token rate limit shared through Redis', () => {
  it.skipIf(REDIS_URL === undefined)(`shares one count between two replicas, and stores no token in Redis${REDIS_SKIP}`, async () => {
    const url = REDIS_URL ?? ''
    // A fresh token per run: counters from an earlier run cannot interfere.
    const token = `run-${randomUUID()}`
    const config = { RATE_LIMIT_PER_MINUTE: 3, REDIS_URL: url }
    const replicaA = await buildTestApp({ tokens: [token], config })
    const replicaB = await buildTestApp({ tokens: [token], config })

    expect((await postPlant(replicaA, { id: 1, name: 'fern' }, json(token))).statusCode).toBe(200)
    expect((await postPlant(replicaA, { id: 2, name: 'fern' }, json(token))).statusCode).toBe(200)
    const third = await postPlant(replicaB, { id: 3, name: 'fern' }, json(token))
    expect(third.statusCode).toBe(200)
    expect(third.headers['ratelimit-remaining']).toBe('0')
    const fourth = await postPlant(replicaB, { id: 4, name: 'fern' }, json(token))
    expect(fourth.statusCode).toBe(429)
    expect(fourth.json()).toMatchObject({ error: 429 })

    const redis = new Redis(url)
    onTestFinished(() => { redis.disconnect() })
    const keys = await redis.keys('plant-store:rate-limit:*')
    expect(keys.length).toBeGreaterThan(0)
    for (const key of keys) expect(key).not.toContain(token)
    const ours = `plant-store:rate-limit:${tokenRateLimitKey(token)}`
    expect(await redis.get(ours)).toBe('4')
  })

  it.skipIf(REDIS_URL === undefined)(`keys a named client's shared count by its name in Redis, never by its token${REDIS_SKIP}`, async () => {
    const url = REDIS_URL ?? ''
    const name = `client-${randomUUID()}`
    const token = `run-${randomUUID()}`
    const config = { RATE_LIMIT_PER_MINUTE: 2, REDIS_URL: url }
    const replicaA = await buildTestApp({ tokens: [{ name, token }], config })
    const replicaB = await buildTestApp({ tokens: [{ name, token }], config })
    expect((await postPlant(replicaA, { id: 1, name: 'fern' }, json(token))).statusCode).toBe(200)
    expect((await postPlant(replicaB, { id: 2, name: 'fern' }, json(token))).statusCode).toBe(200)
    expect((await postPlant(replicaA, { id: 3, name: 'fern' }, json(token))).statusCode).toBe(429)

    const redis = new Redis(url)
    onTestFinished(() => { redis.disconnect() })
    expect(await redis.get(`plant-store:rate-limit:client:${name}`)).toBe('3')
    for (const key of await redis.keys('plant-store:rate-limit:*')) expect(key).not.toContain(token)
  })
})

describe('per-token rate limit when Redis goes away', () => {
  it.skipIf(!HAS_REDIS_SERVER)('keeps serving (fail-open, no 5xx, no crash) when its Redis stops ' +
    `mid-run${HAS_REDIS_SERVER ? '' : ' (SKIPPED: no redis-server binary)'}`, async () => {
    const port = await freePort()
    // A Redis of this test's own, so that stopping it disturbs nobody else.
    const redisServer = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    onTestFinished(() => { redisServer.kill('SIGKILL') })
    const probe = new Redis(`redis://127.0.0.1:${port}`, { lazyConnect: true, retryStrategy: () => 50 })
    probe.on('error', () => {})
    onTestFinished(() => { probe.disconnect() })
    await until(async () => probe.ping().then(() => true, () => false), 5000, 'test Redis up')

    const lines: string[] = []
    const app = await buildTestApp({ logLines: lines, config: { RATE_LIMIT_PER_MINUTE: 100, REDIS_URL: `redis://127.0.0.1:${port}` } })
    const counted = await postPlant(app, { id: 1, name: 'fern' })
    expect(counted.statusCode).toBe(200)
    expect(counted.headers['ratelimit-remaining']).toBe('99')

    const stopped = new Promise((resolve) => redisServer.once('exit', resolve))
    redisServer.kill('SIGTERM')
    await stopped
    for (let id = 2; id <= 5; id++) {
      const res = await postPlant(app, { id, name: 'fern' })
      expect(res.statusCode).toBe(200)
    }
    await until(() => lines.some((line) => line.includes('rate limit store (Redis) failing')), 5000, 'warning logged')
    const warning = JSON.parse(lines.find((line) => line.includes('rate limit store (Redis) failing')) as string)
    expect(warning).toMatchObject({
      level: 40,
      subject: 'rate limit store (Redis)',
      failures: 1,
      msg: expect.stringMatching(/requests are served without a limit$/)
    })
    expect(warning).not.toHaveProperty('err')
  })
})
