import createError from '@fastify/error'
import type { Socket } from 'node:net'
import { Writable } from 'node:stream'
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyReply } from 'fastify'
import pino from 'pino'
import { describe, expect, it, onTestFinished } from 'vitest'
import { NotReadyError, OverloadedError, StoreUnavailableError } from '../src/errors.js'
import { clientErrorHandler, sendError } from '../src/plugins/http-edge.js'

/** A bare Fastify app with the service's error handlers: GET /throw throws what `make` returns. */
async function appThrowing (make: (reply: FastifyReply) => Error) {
  const lines: Record<string, unknown>[] = []
  const logger = pino({ level: 'info' }, new Writable({
    write (chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    }
  }))
  const app = Fastify({ loggerInstance: logger as FastifyBaseLogger })
  app.setErrorHandler(sendError)
  app.get('/throw', async (_request, reply) => { throw make(reply) })
  onTestFinished(() => app.close())
  const reply = await app.inject({ method: 'GET', url: '/throw' })
  return { reply, lines, app }
}

const withStatus = (statusCode: number | undefined, code = 'X_ERR', message = 'a detail for the log only') =>
  Object.assign(new Error(message), { code, ...(statusCode === undefined ? {} : { statusCode }) })

describe('sendError: the Error record for any error', () => {
  it('answers 500 with its status phrase for an error without a 4xx or 5xx status, and logs the error', async () => {
    for (const status of [undefined, 200, 302, 399, 600]) {
      const { reply, lines } = await appThrowing(() => withStatus(status))
      expect(reply.statusCode, String(status)).toBe(500)
      expect(reply.json()).toEqual({ error: 500, message: 'Internal Server Error' })
      expect(lines.find((line) => line.msg === 'request failed')?.err, String(status)).toMatchObject({ message: 'a detail for the log only' })
    }
  })

  it('keeps every status from 400 to 599, the bounds included', async () => {
    expect((await appThrowing(() => withStatus(400))).reply.statusCode).toBe(400)
    expect((await appThrowing(() => withStatus(599))).reply.statusCode).toBe(599)
  })

  it('tells a client the status\'s own phrase for a 5xx that is not the service\'s, never its message; "server error" for a status without a phrase',
    async () => {
      const bad = await appThrowing(() => withStatus(502))
      expect(bad.reply.json()).toEqual({ error: 502, message: 'Bad Gateway' })
      expect((await appThrowing(() => withStatus(599))).reply.json()).toEqual({ error: 599, message: 'server error' })
      const withoutCode = Object.assign(new Error('a detail for the log only'), { statusCode: 502 })
      expect((await appThrowing(() => withoutCode)).reply.json()).toEqual({ error: 502, message: 'Bad Gateway' })
      // A 5xx the service names (PLANTS_…) keeps its message.
      expect((await appThrowing(() => new StoreUnavailableError())).reply.json()).toEqual({
        error: 503,
        message: 'the plant store is unavailable, retry later'
      })
    })

  it('logs a 5xx that is not one of the service\'s own as an error carrying it, and the service\'s own not at all', async () => {
    const { lines } = await appThrowing(() => withStatus(502))
    const logged = lines.find((line) => line.msg === 'request failed')
    expect(logged?.level).toBe(50)
    expect(logged?.err).toMatchObject({ message: 'a detail for the log only' })
    // The service's own are logged elsewhere, once per interval (a store failure, a shed request).
    for (const make of [() => new StoreUnavailableError(), () => new OverloadedError(), () => new NotReadyError()]) {
      const { reply, lines } = await appThrowing(make)
      expect(lines.filter((line) => line.msg === 'request failed'), String(reply.statusCode)).toEqual([])
    }
  })

  it('adds Retry-After: 1 to a 503 only, and keeps a Retry-After the error set', async () => {
    expect((await appThrowing(() => withStatus(503))).reply.headers['retry-after']).toBe('1')
    expect((await appThrowing(() => withStatus(502))).reply.headers['retry-after']).toBeUndefined()
    expect((await appThrowing(() => withStatus(429))).reply.headers['retry-after']).toBeUndefined()
    const own = await appThrowing(() => Object.assign(withStatus(503), { headers: { 'retry-after': '7' } }))
    expect(own.reply.headers['retry-after']).toBe('7')
  })

  it('sends the record as application/json; charset=utf-8, even when the route had set another type', async () => {
    expect((await appThrowing(() => withStatus(418))).reply.headers['content-type']).toBe('application/json; charset=utf-8')
    const { reply } = await appThrowing((routeReply) => {
      routeReply.type('text/plain')
      return withStatus(409)
    })
    expect(reply.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(reply.json()).toEqual({ error: 409, message: 'a detail for the log only' })
  })

  it('keeps the words of Fastify\'s own 4xx errors, and hides those of its 5xx', async () => {
    const framework = (code: string, status = 400) => () => Object.assign(new Error('fastify wording'), { code, statusCode: status }) as FastifyError
    expect((await appThrowing(framework('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415))).reply.json()).toEqual({ error: 415, message: 'fastify wording' })
    expect((await appThrowing(framework('FST_ERR_CTP_INVALID_CONTENT_LENGTH'))).reply.json()).toEqual({ error: 400, message: 'fastify wording' })
    expect((await appThrowing(framework('FST_ERR_ASYNC_CONSTRAINT', 500))).reply.json()).toEqual({ error: 500, message: 'Internal Server Error' })
    const Own = createError('X_TEAPOT', 'short and stout', 418)
    expect((await appThrowing(() => new Own())).reply.json()).toEqual({ error: 418, message: 'short and stout' })
  })

  it('keeps @fastify/bearer-auth\'s words for its 401s and tells a refused token from a missing one in WWW-Authenticate', async () => {
    const bearer = (code: string) => () => Object.assign(new Error('bearer-auth wording'), { code, statusCode: 401 }) as FastifyError
    const missing = (await appThrowing(bearer('FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER'))).reply
    expect(missing.json()).toEqual({ error: 401, message: 'bearer-auth wording' })
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="plants"')
    const invalid = (await appThrowing(bearer('FST_BEARER_AUTH_INVALID_AUTHORIZATION_HEADER'))).reply
    expect(invalid.json()).toEqual({ error: 401, message: 'bearer-auth wording' })
    expect(invalid.headers['www-authenticate']).toBe('Bearer realm="plants", error="invalid_token"')
  })
})

/** A socket as clientErrorHandler sees it: what it was told to do is recorded. */
function fakeSocket ({ writable = true }: { writable?: boolean } = {}) {
  const calls: string[] = []
  const socket = {
    writable,
    destroy: () => { calls.push('destroy') },
    end: (data: string) => { calls.push(`end ${data.split('\r\n', 1)[0]}`) }
  }
  return { socket: socket as unknown as Socket, calls, state: socket }
}

const parseError = (code: string) => Object.assign(new Error(code), { code })

describe('clientErrorHandler: malformed HTTP', () => {
  it('destroys a reset socket, or one that cannot take a reply, without answering', () => {
    for (const [error, writable] of [[parseError('ECONNRESET'), true], [parseError('HPE_INVALID_METHOD'), false]] as const) {
      const { socket, calls } = fakeSocket({ writable })
      clientErrorHandler(error, socket)
      expect(calls).toEqual(['destroy'])
    }
  })

  it('answers 400 to a parser error without a code', () => {
    const { socket, calls } = fakeSocket()
    clientErrorHandler(new Error('no code'), socket)
    expect(calls).toEqual(['end HTTP/1.1 400 Bad Request'])
  })

  it('leaves bytes after a request that said Connection: close to Node, which closes once its reply is written', () => {
    const { socket, calls } = fakeSocket()
    clientErrorHandler(parseError('HPE_CLOSED_CONNECTION'), socket)
    expect(calls).toEqual([])
  })

  it('answers 431, 408 or 400', () => {
    for (const [code, status] of [['HPE_HEADER_OVERFLOW', 431], ['ERR_HTTP_REQUEST_TIMEOUT', 408], ['HPE_INVALID_METHOD', 400],
      ['HPE_INVALID_VERSION', 400]] as const) {
      const { socket, calls } = fakeSocket()
      clientErrorHandler(parseError(code), socket)
      expect(calls).toEqual([`end HTTP/1.1 ${status} ${{ 431: 'Request Header Fields Too Large', 408: 'Request Timeout', 400: 'Bad Request' }[status]}`])
    }
  })

  it('writes the Error record with its headers, and closes', () => {
    const written: string[] = []
    const socket = { writable: true, end: (data: string) => { written.push(data) } } as unknown as Socket
    clientErrorHandler(parseError('HPE_INVALID_METHOD'), socket)
    const body = '{"error":400,"message":"Bad Request"}'
    expect(written).toEqual([`HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${body.length}\r\n` +
      `cache-control: no-store\r\nx-content-type-options: nosniff\r\nconnection: close\r\n\r\n${body}`])
  })
})
