import { describe, expect, it } from 'vitest'
import { TOKEN, buildTestApp, listening } from '../helpers.js'
import { countingRepository, parseRawReply, rawExchange, splitReplies } from './hardening-helpers.js'

/**
 * Requests Node's HTTP server would answer by itself with a bare reply (no body, no request id) get
 * the Error record from the app; the edges where Node's own answer is kept are pinned as such. Raw
 * sockets: clients cannot send most of these.
 */

const BODY = '{"id":1,"name":"fern"}'

/** A listening app whose store counts inserts. */
async function countingApp () {
  const repository = countingRepository()
  return { repository, port: await listening(await buildTestApp({ repository })) }
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
      const { repository, port } = await countingApp()
      expectErrorRecord(parseRawReply(await rawExchange(port, request(head, body))), 400, 'an HTTP/1.1 request must carry a Host header')
      expect(repository.inserts).toBe(0)
    })
  }

  it('serves an HTTP/1.0 request without Host (HTTP/1.0 has none)', async () => {
    const { port } = await countingApp()
    const reply = parseRawReply(await rawExchange(port, 'GET /livez HTTP/1.0\r\n\r\n'))
    expect(reply.status).toBe(200)
    expect(JSON.parse(reply.body)).toEqual({ status: 'ok' })
  })
})

describe('an Expect other than 100-continue', () => {
  const message = 'Expect must be 100-continue'

  for (const [name, auth] of [['without a token', ''], ['with a valid token', `Authorization: Bearer ${TOKEN}\r\n`]] as const) {
    it(`answers 417 Error on POST /plants ${name}, before the token is checked, and stores nothing`, async () => {
      const { repository, port } = await countingApp()
      const reply = parseRawReply(await rawExchange(port, request(`POST /plants HTTP/1.1\r\nHost: localhost\r\n${auth}Expect: x-fancy`, BODY)))
      expectErrorRecord(reply, 417, message)
      expect(repository.inserts).toBe(0)
    })
  }

  it('answers 417 Error on a route that needs no token, without quoting the expectation', async () => {
    const { port } = await countingApp()
    const text = await rawExchange(port, request(`GET /livez HTTP/1.1\r\nHost: localhost\r\nExpect: x-${'e'.repeat(400)}`))
    expectErrorRecord(parseRawReply(text), 417, message)
  })

  it('answers 417 Error to "Expect: 100-continue, foo", after the 100 Continue Node writes for any mention of 100-continue', async () => {
    const { repository, port } = await countingApp()
    const text = await rawExchange(port,
      request(`POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nExpect: 100-continue, foo`, BODY))
    expect(splitReplies(text)).toMatchObject({ answers: [{ interim: [100], reply: { status: 417 } }], rest: '' })
    expect(repository.inserts).toBe(0)
  })

  it('meets Expect: 100-continue, in any case: 100 Continue, then the 200', async () => {
    const { repository, port } = await countingApp()
    const text = await rawExchange(port, request(`POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nExpect: 100-Continue`, BODY))
    expect(splitReplies(text)).toMatchObject({ answers: [{ interim: [100], reply: { status: 200 } }], rest: '' })
    expect(repository.inserts).toBe(1)
  })
})

describe('edges where Node\'s own answer is kept', () => {
  it('serves a request with two Host headers with the first, as Node does', async () => {
    const { port } = await countingApp()
    const reply = parseRawReply(await rawExchange(port, request('GET /livez HTTP/1.1\r\nHost: a\r\nHost: b')))
    expect(reply.status).toBe(200)
  })

  it('uses the first of two Authorization headers, as Node does', async () => {
    const { repository, port } = await countingApp()
    const valid = parseRawReply(await rawExchange(port,
      request(`POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nAuthorization: Bearer wrong`, BODY)))
    expect(valid.status).toBe(200)
    const wrong = parseRawReply(await rawExchange(port,
      request(`POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\nAuthorization: Bearer ${TOKEN}`, BODY)))
    expectErrorRecord(wrong, 401, 'invalid authorization header')
    expect(repository.inserts).toBe(1)
  })

  it('serves an HTTP/2.0 request line as HTTP/1.1, as Node 24 does', async () => {
    const { port } = await countingApp()
    const reply = parseRawReply(await rawExchange(port, 'GET /livez HTTP/2.0\r\nHost: x\r\nConnection: close\r\n\r\n'))
    expect(reply.status).toBe(200)
  })

  it('closes a CONNECT without a reply, as Node does, and stores nothing', async () => {
    const { repository, port } = await countingApp()
    expect(await rawExchange(port, request('CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443', BODY))).toBe('')
    expect(repository.inserts).toBe(0)
  })
})
