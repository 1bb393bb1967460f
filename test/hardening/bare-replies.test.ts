import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { TOKEN, buildTestApp } from '../helpers.js'
import { countingRepository, parseRawReply, rawExchange } from './hardening-helpers.js'

/**
 * Requests Node's HTTP server used to answer by itself with a bare reply (no body, no request id),
 * and requests it silently cut down (a second Authorization header dropped): each now gets the Error
 * record from the app, with the usual headers. Raw sockets: clients cannot send most of these.
 */

const BODY = '{"id":1,"name":"fern"}'

async function listening () {
  const repository = countingRepository()
  const app = await buildTestApp({ repository })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { repository, port: (app.server.address() as AddressInfo).port }
}

/** One request, with Connection: close so that the exchange ends with the reply. */
const request = (head: string, body = ''): string =>
  `${head}\r\nConnection: close\r\n${body === '' ? '' : `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n`}\r\n${body}`

function expectErrorRecord (reply: ReturnType<typeof parseRawReply>, status: number, message: string): void {
  expect(reply.status).toBe(status)
  expect(reply.headers['content-type']).toBe('application/json; charset=utf-8')
  expect(reply.headers['x-request-id']).toMatch(/^\S+$/)
  expect(reply.headers['x-content-type-options']).toBe('nosniff')
  expect(reply.headers['cache-control']).toBe('no-store')
  expect(JSON.parse(reply.body)).toEqual({ error: status, message })
}

describe('an HTTP/1.1 request without Host', () => {
  for (const [name, head, body] of [
    ['POST /plants with a token', `POST /plants HTTP/1.1\r\nAuthorization: Bearer ${TOKEN}`, BODY],
    ['POST /plants without a token', 'POST /plants HTTP/1.1', BODY],
    ['GET /livez', 'GET /livez HTTP/1.1', '']
  ] as const) {
    it(`answers 400 Error for ${name}, with a request id, and stores nothing`, async () => {
      const { repository, port } = await listening()
      expectErrorRecord(parseRawReply(await rawExchange(port, request(head, body))), 400, 'an HTTP/1.1 request must carry a Host header')
      expect(repository.inserts).toBe(0)
    })
  }

  it('serves an HTTP/1.0 request without Host (HTTP/1.0 has none)', async () => {
    const { port } = await listening()
    const reply = parseRawReply(await rawExchange(port, 'GET /livez HTTP/1.0\r\n\r\n'))
    expect(reply.status).toBe(200)
    expect(JSON.parse(reply.body)).toEqual({ status: 'ok' })
  })
})

describe('an Expect other than 100-continue', () => {
  const expectFoo = 'Expect: x-fancy'
  const message = 'the expectation "x-fancy" cannot be met: send no Expect header, or Expect: 100-continue'

  it('answers 401 Error on POST /plants without a token: the token is checked before the expectation', async () => {
    const { repository, port } = await listening()
    const reply = parseRawReply(await rawExchange(port, request(`POST /plants HTTP/1.1\r\nHost: localhost\r\n${expectFoo}`, BODY)))
    expectErrorRecord(reply, 401, 'a bearer token is required: send "Authorization: Bearer <token>"')
    expect(reply.headers['www-authenticate']).toBe('Bearer realm="plants"')
    expect(repository.inserts).toBe(0)
  })

  it('answers 401 Error on POST /plants with a wrong token', async () => {
    const { port } = await listening()
    const reply = parseRawReply(await rawExchange(port, request(`POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer wrong\r\n${expectFoo}`, BODY)))
    expectErrorRecord(reply, 401, 'the bearer token is not valid')
  })

  it('answers 417 Error on POST /plants with a valid token, and stores nothing', async () => {
    const { repository, port } = await listening()
    const reply = parseRawReply(await rawExchange(port, request(`POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\n${expectFoo}`, BODY)))
    expectErrorRecord(reply, 417, message)
    expect(repository.inserts).toBe(0)
  })

  for (const [name, head] of [['GET /livez', 'GET /livez HTTP/1.1'], ['GET /nope', 'GET /nope HTTP/1.1']] as const) {
    it(`answers 417 Error on ${name}, a route that needs no token`, async () => {
      const { port } = await listening()
      expectErrorRecord(parseRawReply(await rawExchange(port, request(`${head}\r\nHost: localhost\r\n${expectFoo}`))), 417, message)
    })
  }

  it('still meets Expect: 100-continue: 100 Continue, then the 200', async () => {
    const { repository, port } = await listening()
    const text = await rawExchange(port, request(`POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nExpect: 100-continue`, BODY))
    expect(text.startsWith('HTTP/1.1 100 Continue\r\n\r\n')).toBe(true)
    const reply = parseRawReply(text.slice('HTTP/1.1 100 Continue\r\n\r\n'.length))
    expect(reply.status).toBe(200)
    expect(repository.inserts).toBe(1)
  })
})

describe('two Authorization headers', () => {
  const message = 'the request carries 2 Authorization headers: send exactly one'
  for (const [name, first, second] of [
    ['a valid token then a wrong one', `Bearer ${TOKEN}`, 'Bearer wrong'],
    ['a wrong token then a valid one', 'Bearer wrong', `Bearer ${TOKEN}`],
    ['the same valid token twice', `Bearer ${TOKEN}`, `Bearer ${TOKEN}`],
    ['another scheme then a valid token', 'Basic dXNlcjpwYXNz', `Bearer ${TOKEN}`]
  ] as const) {
    it(`refuses ${name} with 400 Error and error="invalid_request" (RFC 6750 §3.1), and stores nothing`, async () => {
      const { repository, port } = await listening()
      const reply = parseRawReply(await rawExchange(port, request(`POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${first}\r\nAuthorization: ${second}`, BODY)))
      expectErrorRecord(reply, 400, message)
      expect(reply.headers['www-authenticate']).toBe('Bearer realm="plants", error="invalid_request"')
      expect(repository.inserts).toBe(0)
    })
  }
})

describe('QUERY without a body', () => {
  for (const [path, status, message] of [
    ['/nope', 404, 'no route for QUERY /nope'],
    ['/livez', 404, 'no route for QUERY /livez'],
    ['/plants', 405, 'QUERY is not allowed on /plants; allowed: POST']
  ] as const) {
    it(`answers ${status} Error on ${path}, as any other method there, not a 400 about its Content-Type`, async () => {
      const { repository, port } = await listening()
      const reply = parseRawReply(await rawExchange(port, request(`QUERY ${path} HTTP/1.1\r\nHost: localhost`)))
      expectErrorRecord(reply, status, message)
      if (status === 405) expect(reply.headers.allow).toBe('POST')
      expect(repository.inserts).toBe(0)
    })
  }

  it('answers 404 Error on an unknown path for a QUERY with a JSON body too (its content is never read)', async () => {
    const { port } = await listening()
    expectErrorRecord(parseRawReply(await rawExchange(port, request('QUERY /nope HTTP/1.1\r\nHost: localhost', BODY))), 404, 'no route for QUERY /nope')
  })
})
