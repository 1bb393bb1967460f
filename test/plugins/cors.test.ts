import type { AddressInfo } from 'node:net'
import Fastify, { type LightMyRequestResponse } from 'fastify'
import { describe, expect, it } from 'vitest'
import { defaultOverloadLimits } from '../../src/config.js'
import { corsPolicy } from '../../src/plugins/cors.js'
import { AUTH, JSON_AUTH, buildTestApp, postPlant } from '../helpers.js'
import { parseRawReply, rawExchange, until } from '../hardening/hardening-helpers.js'
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
  it('sends no CORS header and no Vary to a request with an Origin, and OPTIONS /plants stays the 204 with Allow', async () => {
    const app = await buildTestApp()
    const post = await postPlant(app, plant, { ...JSON_AUTH, origin: APP })
    expect(post.statusCode).toBe(200)
    expect(corsHeaders(post)).toEqual({})
    expect(post.headers.vary).toBeUndefined()
    const options = await preflight(app, APP)
    expect(options.statusCode).toBe(204)
    expect(options.headers.allow).toBe('POST, OPTIONS')
    expect(corsHeaders(options)).toEqual({})
  })
})

describe('CORS for listed origins (CORS_ORIGINS)', () => {
  it('registers the cors-policy plugin (the name other plugins can depend on) only when origins are listed', async () => {
    expect((await corsApp()).hasPlugin('cors-policy')).toBe(true)
    expect((await buildTestApp()).hasPlugin('cors-policy')).toBe(false)
  })

  it('answers the preflight of POST /plants with Authorization and Content-Type: 204, no token, a 600 s max age', async () => {
    const app = await corsApp()
    const res = await preflight(app, APP)
    expect(res.statusCode).toBe(204)
    expect(res.body).toBe('')
    expect(corsHeaders(res)).toEqual({
      'access-control-allow-origin': APP,
      'access-control-allow-methods': 'POST',
      'access-control-allow-headers': 'authorization, content-type, content-encoding, x-request-id',
      'access-control-expose-headers': EXPOSED,
      'access-control-max-age': '600'
    })
    expect(res.headers.vary).toBe('Origin')
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

  it('registers as the cors-policy plugin, so that a plugin can declare it as a dependency', async () => {
    const app = await corsApp()
    expect(app.hasPlugin('cors-policy')).toBe(true)
  })

  it('gives an unlisted origin no CORS header: its preflight is the plain OPTIONS 204, its POST has no Access-Control-*', async () => {
    const app = await corsApp()
    const options = await preflight(app, OTHER)
    expect(options.statusCode).toBe(204)
    expect(options.headers.allow).toBe('POST, OPTIONS')
    expect(corsHeaders(options)).toEqual({})
    const post = await postPlant(app, plant, { ...JSON_AUTH, origin: OTHER })
    expect(post.statusCode).toBe(200)
    expect(corsHeaders(post)).toEqual({})
    expect(post.headers.vary).toBe('Origin')
  })

  it('compares origins exactly: another scheme, port, case or a trailing slash is not listed', async () => {
    const app = await corsApp()
    for (const origin of ['http://app.example.com', 'https://app.example.com:8443', 'https://APP.example.com', `${APP}/`, 'null']) {
      expect(corsHeaders(await preflight(app, origin)), origin).toEqual({})
    }
  })

  it('sends no CORS header to a request without Origin (same-origin or not a browser)', async () => {
    const app = await corsApp()
    const res = await postPlant(app, plant)
    expect(res.statusCode).toBe(200)
    expect(corsHeaders(res)).toEqual({})
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

  it('carries the CORS headers on replies made before routing: a bad URL (400), a 404, the not-found handler\'s 405 and a QUERY 404', async () => {
    const app = await corsApp()
    const headers = { origin: APP }
    const replies = [
      await app.inject({ method: 'GET', url: '/plants%zz', headers }),
      await app.inject({ method: 'POST', url: '/nope%', headers }),
      await app.inject({ method: 'GET', url: '/nope', headers }),
      await app.inject({ method: 'PROPFIND', url: '/plants', headers }),
      await app.inject({ method: 'QUERY', url: '/nope', headers })
    ]
    expect(replies.map((res) => res.statusCode)).toEqual([400, 400, 404, 405, 404])
    for (const res of replies) {
      expect(corsHeaders(res), String(res.statusCode)).toEqual({ 'access-control-allow-origin': APP, 'access-control-expose-headers': EXPOSED })
      expect(res.headers.vary, String(res.statusCode)).toBe('Origin')
      expect(res.json().error).toBe(res.statusCode)
    }
  })

  it('gives an unlisted origin no CORS header on a bad URL either, only Vary: Origin', async () => {
    const app = await corsApp()
    const res = await app.inject({ method: 'GET', url: '/plants%zz', headers: { origin: OTHER } })
    expect(res.statusCode).toBe(400)
    expect(corsHeaders(res)).toEqual({})
    expect(res.headers.vary).toBe('Origin')
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

  it('treats an OPTIONS without Access-Control-Request-Method as no preflight: the 204 with Allow, plus the simple CORS headers', async () => {
    const app = await corsApp()
    const res = await app.inject({ method: 'OPTIONS', url: '/plants', headers: { origin: APP } })
    expect(res.statusCode).toBe(204)
    expect(res.headers.allow).toBe('POST, OPTIONS')
    expect(corsHeaders(res)).toEqual({ 'access-control-allow-origin': APP, 'access-control-expose-headers': EXPOSED })
  })

  it('allows every origin with Access-Control-Allow-Origin: * when CORS_ORIGINS is *', async () => {
    const app = await corsApp(['*'])
    const pre = await preflight(app, OTHER)
    expect(pre.statusCode).toBe(204)
    expect(pre.headers['access-control-allow-origin']).toBe('*')
    expect(pre.headers['access-control-allow-headers']).toBe('authorization, content-type, content-encoding, x-request-id')
    const post = await postPlant(app, plant, { ...JSON_AUTH, origin: OTHER })
    expect(post.headers['access-control-allow-origin']).toBe('*')
  })

  it('with CORS_ORIGINS *, carries Access-Control-Allow-Origin: * on errors from any origin, made in a hook (401) or before routing (a bad URL)', async () => {
    const app = await corsApp(['*'])
    const replies = [
      await postPlant(app, plant, { 'content-type': 'application/json', origin: OTHER }),
      await app.inject({ method: 'GET', url: '/plants%zz', headers: { origin: OTHER } })
    ]
    expect(replies.map((res) => res.statusCode)).toEqual([401, 400])
    for (const res of replies) {
      expect(corsHeaders(res), String(res.statusCode)).toEqual({ 'access-control-allow-origin': '*', 'access-control-expose-headers': EXPOSED })
      expect(res.headers.vary, String(res.statusCode)).toBe('Origin')
    }
  })

  it('with CORS_ORIGINS *, still sends no CORS header to a request without Origin, served (200) or refused (401, a bad URL)', async () => {
    const app = await corsApp(['*'])
    const replies = [
      await postPlant(app, plant),
      await postPlant(app, plant, { 'content-type': 'application/json' }),
      await app.inject({ method: 'GET', url: '/plants%zz' })
    ]
    expect(replies.map((res) => res.statusCode)).toEqual([200, 401, 400])
    for (const res of replies) {
      expect(corsHeaders(res), String(res.statusCode)).toEqual({})
      expect(res.headers.vary, String(res.statusCode)).toBe('Origin')
    }
  })

  it('does not count preflights against the rate limit, and a 429 carries the CORS headers', async () => {
    const app = await corsApp([APP], { rateLimit: { perMinute: 1 } })
    for (let i = 0; i < 3; i++) expect((await preflight(app, APP)).statusCode).toBe(204)
    const served = await postPlant(app, plant, { ...JSON_AUTH, origin: APP })
    expect(served.statusCode).toBe(200)
    expect(served.headers['ratelimit-remaining']).toBe('0')
    const limited = await postPlant(app, plant, { ...JSON_AUTH, origin: APP })
    expect(limited.statusCode).toBe(429)
    expect(limited.headers['retry-after']).toBeDefined()
    expect(corsHeaders(limited)).toEqual({ 'access-control-allow-origin': APP, 'access-control-expose-headers': EXPOSED })
  })

  it('carries the CORS headers on a 503 shed under overload', async () => {
    const app = await corsApp([APP], { overload: { ...defaultOverloadLimits(), maxHeapUsedBytes: 1, sampleIntervalMs: 10 } })
    await app.ready()
    await until(() => app.isUnderPressure(), 5000, 'pressure seen')
    const res = await postPlant(app, plant, { ...AUTH, 'content-type': 'application/json', origin: APP })
    expect(res.statusCode).toBe(503)
    expect(res.headers['retry-after']).toBe('1')
    expect(corsHeaders(res)).toEqual({ 'access-control-allow-origin': APP, 'access-control-expose-headers': EXPOSED })
  })

  it('answers preflights while requests are shed under overload (they cost nothing and need no token)', async () => {
    const app = await corsApp([APP], { overload: { ...defaultOverloadLimits(), maxHeapUsedBytes: 1, sampleIntervalMs: 10 } })
    await app.ready()
    await until(() => app.isUnderPressure(), 5000, 'pressure seen')
    const res = await preflight(app, APP)
    expect(res.statusCode).toBe(204)
    expect(res.headers['access-control-allow-origin']).toBe(APP)
  })
})

describe('the CORS policy\'s headersOfErrors, on a reply the CORS hook may have seen', () => {
  /** A reply that already carries `vary` (and `access-control-allow-origin`), when given, then meets headersOfErrors; `origin` null: no Origin. */
  async function after (given: { vary?: string, allowOrigin?: string }, origin: string | null = APP, origins: string[] = [APP]) {
    const app = Fastify()
    const addCorsHeaders = corsPolicy(origins).headersOfErrors
    app.get('/', (request, reply) => {
      if (given.vary !== undefined) reply.header('vary', given.vary)
      if (given.allowOrigin !== undefined) reply.header('access-control-allow-origin', given.allowOrigin)
      addCorsHeaders(request, reply)
      reply.send('')
    })
    const res = await app.inject({ method: 'GET', url: '/', headers: origin === null ? {} : { origin } })
    return { vary: res.headers.vary, cors: corsHeaders(res) }
  }

  const added = { 'access-control-allow-origin': APP, 'access-control-expose-headers': EXPOSED }

  it('adds Vary: Origin and the CORS headers of a listed origin to a reply with no Vary', async () => {
    expect(await after({})).toEqual({ vary: 'Origin', cors: added })
  })

  it('appends Origin to a Vary that does not list it, and adds the CORS headers', async () => {
    for (const vary of ['Accept-Encoding', 'X-Origin', 'Origins', 'Accept, Origin-Agent-Cluster']) {
      expect(await after({ vary }), vary).toEqual({ vary: `${vary}, Origin`, cors: added })
    }
  })

  it('leaves a reply whose Vary lists Origin alone, in any case and at any place of the list: the CORS hook has run', async () => {
    for (const vary of ['Origin', 'origin', 'ORIGIN', 'Accept, Origin', 'Accept,Origin', 'Origin, Accept', 'Origin,Accept', 'Accept ,  origin  , Range']) {
      expect(await after({ vary }), vary).toEqual({ vary, cors: {} })
    }
  })

  it('leaves a reply that already carries Access-Control-Allow-Origin alone, even without Vary', async () => {
    expect(await after({ allowOrigin: APP })).toEqual({ vary: undefined, cors: { 'access-control-allow-origin': APP } })
  })

  it('adds only Vary: Origin for a request without Origin or from an unlisted origin', async () => {
    expect(await after({}, null)).toEqual({ vary: 'Origin', cors: {} })
    expect(await after({}, OTHER)).toEqual({ vary: 'Origin', cors: {} })
    expect(await after({ vary: 'Accept' }, OTHER)).toEqual({ vary: 'Accept, Origin', cors: {} })
  })

  it('allows any origin with * when the list is *, and still none to a request without Origin', async () => {
    expect(await after({}, OTHER, ['*'])).toEqual({ vary: 'Origin', cors: { 'access-control-allow-origin': '*', 'access-control-expose-headers': EXPOSED } })
    expect(await after({}, null, ['*'])).toEqual({ vary: 'Origin', cors: {} })
  })
})
