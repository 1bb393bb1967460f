import type { AddressInfo } from 'node:net'
import type { LightMyRequestResponse } from 'fastify'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { AUTH, JSON_AUTH, buildTestApp, postPlant, until } from '../helpers.js'
import { parseRawReply, rawExchange } from '../hardening/hardening-helpers.js'
import type { App } from '../../src/app.js'

const APP = 'https://app.example.com'
const OTHER = 'https://evil.example.net'
const EXPOSED = 'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, www-authenticate, allow, accept-encoding'

const corsApp = (origins: string[] = [APP], config = {}) => buildTestApp({ config: { corsOrigins: origins, ...config } })

/** The Access-Control-* headers of a reply, by name. */
const corsHeaders = (res: LightMyRequestResponse) =>
  Object.fromEntries(Object.entries(res.headers).filter(([name]) => name.startsWith('access-control-')))

/** What a browser sends before a POST /plants with Authorization and Content-Type from `origin`. */
const preflight = (app: App, origin: string) => app.inject({
  method: 'OPTIONS',
  url: '/plants',
  headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' }
})

const plant = { id: 1, name: 'fern' }

describe('CORS, unset (the default)', () => {
  it('sends no CORS header and no Vary to a request with an Origin, and OPTIONS /plants is a 405 with Allow: POST', async () => {
    const app = await buildTestApp()
    const post = await postPlant(app, plant, { ...JSON_AUTH, origin: APP })
    expect(post.statusCode).toBe(200)
    expect(corsHeaders(post)).toEqual({})
    expect(post.headers.vary).toBeUndefined()
    const options = await preflight(app, APP)
    expect(options.statusCode).toBe(405)
    expect(options.headers.allow).toBe('POST')
    expect(corsHeaders(options)).toEqual({})
  })
})

describe('CORS for listed origins (CORS_ORIGINS)', () => {
  it('answers for the whole app only when origins are listed: a listed Origin on /livez is allowed, and nothing without the setting', async () => {
    const livez = async (app: App) => corsHeaders(await app.inject({ method: 'GET', url: '/livez', headers: { origin: APP } }))
    expect(await livez(await corsApp())).toMatchObject({ 'access-control-allow-origin': APP })
    expect(await livez(await buildTestApp())).toEqual({})
  })

  it('answers the preflight of POST /plants with Authorization and Content-Type: 204, no token, the headers asked for, a 600 s max age', async () => {
    const app = await corsApp()
    const res = await preflight(app, APP)
    expect(res.statusCode).toBe(204)
    expect(res.body).toBe('')
    expect(corsHeaders(res)).toEqual({
      'access-control-allow-origin': APP,
      'access-control-allow-methods': 'GET,HEAD,POST',
      'access-control-allow-headers': 'authorization,content-type',
      'access-control-expose-headers': EXPOSED,
      'access-control-max-age': '600'
    })
    expect(res.headers.vary).toBe('Origin, Access-Control-Request-Headers')
    expect(res.headers['www-authenticate']).toBeUndefined()
  })

  it('lets the listed origin read the reply to its POST, with x-request-id, Retry-After and the RateLimit headers exposed', async () => {
    const app = await corsApp()
    const res = await postPlant(app, plant, { ...JSON_AUTH, origin: APP })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ name: 'fern' })
    expect(corsHeaders(res)).toEqual({ 'access-control-allow-origin': APP, 'access-control-expose-headers': EXPOSED })
    expect(res.headers.vary).toBe('Origin')
  })

  it('answers a POST that carries Access-Control-Request-Method as a simple request (only an OPTIONS is a preflight)', async () => {
    const app = await corsApp()
    const res = await postPlant(app, plant, { ...JSON_AUTH, origin: APP, 'access-control-request-method': 'POST' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ name: 'fern' })
    expect(corsHeaders(res)).toEqual({ 'access-control-allow-origin': APP, 'access-control-expose-headers': EXPOSED })
  })

  it('never allows an unlisted origin: no Access-Control-Allow-Origin on its preflight or its POST', async () => {
    const app = await corsApp()
    const options = await preflight(app, OTHER)
    expect(options.statusCode).toBe(204)
    expect(options.headers['access-control-allow-origin']).toBeUndefined()
    const post = await postPlant(app, plant, { ...JSON_AUTH, origin: OTHER })
    expect(post.statusCode).toBe(200)
    expect(post.headers['access-control-allow-origin']).toBeUndefined()
    expect(post.headers.vary).toBe('Origin')
  })

  it('compares origins exactly: another scheme, port, case or a trailing slash is not listed', async () => {
    const app = await corsApp()
    for (const origin of ['http://app.example.com', 'https://app.example.com:8443', 'https://APP.example.com', `${APP}/`, 'null']) {
      expect((await preflight(app, origin)).headers['access-control-allow-origin'], origin).toBeUndefined()
    }
  })

  it('allows no origin to a request without Origin (same-origin or not a browser)', async () => {
    const app = await corsApp()
    const res = await postPlant(app, plant)
    expect(res.statusCode).toBe(200)
    expect(res.headers['access-control-allow-origin']).toBeUndefined()
  })

  it('carries the CORS headers on errors for a listed origin, so the page can read the Error record (401, 400, 404, 405, 415)', async () => {
    const app = await corsApp()
    const headers = { origin: APP }
    const replies = [
      await postPlant(app, plant, { ...headers, 'content-type': 'application/json' }),
      await postPlant(app, '{"id":', { ...JSON_AUTH, ...headers }),
      await app.inject({ method: 'GET', url: '/nope', headers }),
      await app.inject({ method: 'DELETE', url: '/plants', headers }),
      await postPlant(app, plant, { ...JSON_AUTH, ...headers, 'content-encoding': 'x-unknown' })
    ]
    expect(replies.map((res) => res.statusCode)).toEqual([401, 400, 404, 405, 415])
    for (const res of replies) {
      expect(corsHeaders(res), String(res.statusCode)).toEqual({ 'access-control-allow-origin': APP, 'access-control-expose-headers': EXPOSED })
      expect(res.json().error).toBe(res.statusCode)
    }
  })

  it('carries no CORS headers on a reply made before routing (a bad URL), as Fastify makes it', async () => {
    const app = await corsApp()
    const res = await app.inject({ method: 'GET', url: '/plants%zz', headers: { origin: APP } })
    expect(res.statusCode).toBe(400)
    expect(corsHeaders(res)).toEqual({})
    expect(res.json()).toEqual({ error: 400, message: "'/plants%zz' is not a valid url component" })
  })

  it('carries the CORS headers on replies Node would have made itself (raw socket): no Host (400), an unmet Expect (417)', async () => {
    const app = await corsApp()
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    const replies = [
      parseRawReply(await rawExchange(port, `GET /livez HTTP/1.1\r\nOrigin: ${APP}\r\nConnection: close\r\n\r\n`)),
      parseRawReply(await rawExchange(port, `GET /livez HTTP/1.1\r\nHost: localhost\r\nOrigin: ${APP}\r\nExpect: x-fancy\r\nConnection: close\r\n\r\n`))
    ]
    expect(replies.map((reply) => reply.status)).toEqual([400, 417])
    for (const reply of replies) {
      expect(reply.headers['access-control-allow-origin']).toBe(APP)
      expect(reply.headers['access-control-expose-headers']).toBe(EXPOSED)
      expect(reply.headers.vary).toBe('Origin')
    }
  })

  it('carries x-request-id, nosniff and no-store on the preflight\'s 204, like every reply', async () => {
    const res = await preflight(await corsApp(), APP)
    expect(res.statusCode).toBe(204)
    expect(res.headers['x-request-id']).toMatch(/^\S+$/)
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(res.headers['cache-control']).toBe('no-store')
  })

  it('answers an OPTIONS without Access-Control-Request-Method as a preflight too (204), never a 405 or a plain-text 400', async () => {
    const app = await corsApp()
    const res = await app.inject({ method: 'OPTIONS', url: '/plants', headers: { origin: APP } })
    expect(res.statusCode).toBe(204)
    expect(res.headers['access-control-allow-origin']).toBe(APP)
  })

  it('allows every origin with Access-Control-Allow-Origin: * when CORS_ORIGINS is *', async () => {
    const app = await corsApp(['*'])
    const pre = await preflight(app, OTHER)
    expect(pre.statusCode).toBe(204)
    expect(pre.headers['access-control-allow-origin']).toBe('*')
    expect(pre.headers['access-control-allow-headers']).toBe('authorization,content-type')
    const post = await postPlant(app, plant, { ...JSON_AUTH, origin: OTHER })
    expect(post.headers['access-control-allow-origin']).toBe('*')
  })

  it('with CORS_ORIGINS *, carries Access-Control-Allow-Origin: * on errors from any origin (401, 404)', async () => {
    const app = await corsApp(['*'])
    const replies = [
      await postPlant(app, plant, { 'content-type': 'application/json', origin: OTHER }),
      await app.inject({ method: 'GET', url: '/nope', headers: { origin: OTHER } })
    ]
    expect(replies.map((res) => res.statusCode)).toEqual([401, 404])
    for (const res of replies) {
      expect(corsHeaders(res), String(res.statusCode)).toEqual({ 'access-control-allow-origin': '*', 'access-control-expose-headers': EXPOSED })
    }
  })

  it('does not count preflights against the rate limit, and a 429 carries the CORS headers', async () => {
    // The limiter's clock, moved by hand: the 429 comes 15.7 s into the minute (44.3 s left).
    vi.useFakeTimers({ toFake: ['Date'] })
    onTestFinished(() => { vi.useRealTimers() })
    const app = await corsApp([APP], { RATE_LIMIT_PER_MINUTE: 1 })
    for (let i = 0; i < 3; i++) expect((await preflight(app, APP)).statusCode).toBe(204)
    const served = await postPlant(app, plant, { ...JSON_AUTH, origin: APP })
    expect(served.statusCode).toBe(200)
    expect(served.headers['ratelimit-remaining']).toBe('0')
    vi.setSystemTime(Date.now() + 15700)
    const limited = await postPlant(app, plant, { ...JSON_AUTH, origin: APP })
    expect(limited.statusCode).toBe(429)
    // The seconds left of the minute, rounded up, in the header and the message.
    expect(limited.headers['retry-after']).toBe('45')
    expect(limited.json()).toEqual({ error: 429, message: 'too many requests with this token: at most 1 per minute, retry in 45 s' })
    expect(corsHeaders(limited)).toEqual({ 'access-control-allow-origin': APP, 'access-control-expose-headers': EXPOSED })
  })

  it('carries the CORS headers on a 503 shed under overload', async () => {
    const app = await corsApp([APP], { MAX_RSS_ANON_BYTES: 1 })
    await app.ready()
    await until(() => app.isUnderPressure(), 5000, 'pressure seen')
    const res = await postPlant(app, plant, { ...AUTH, 'content-type': 'application/json', origin: APP })
    expect(res.statusCode).toBe(503)
    expect(res.headers['retry-after']).toBe('1')
    expect(corsHeaders(res)).toEqual({ 'access-control-allow-origin': APP, 'access-control-expose-headers': EXPOSED })
  })

  it('answers preflights while requests are shed under overload (they cost nothing and need no token)', async () => {
    const app = await corsApp([APP], { MAX_RSS_ANON_BYTES: 1 })
    await app.ready()
    await until(() => app.isUnderPressure(), 5000, 'pressure seen')
    const res = await preflight(app, APP)
    expect(res.statusCode).toBe(204)
    expect(res.headers['access-control-allow-origin']).toBe(APP)
  })
})
