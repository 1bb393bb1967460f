import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { TOKEN, buildTestApp } from '../helpers.js'
import { countingRepository, parseRawReply, rawExchange } from './hardening-helpers.js'

const BODY = '{"id":1,"name":"fern"}'
const post = (head: string): string =>
  `POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n${head}\r\n${BODY}`

/** Requests that are not HTTP a server may act on, each with the status it must get. */
const cases: { name: string, request: string, status: number, message: string }[] = [
  { name: 'a request line that is not HTTP', request: 'GARBAGE\r\n\r\n', status: 400, message: 'Bad Request' },
  {
    name: 'a header line without a colon',
    request: post(`Content-Length: ${BODY.length}\r\nNo colon here\r\n`),
    status: 400,
    message: 'Bad Request'
  },
  {
    name: 'a control character in a header value',
    request: post(`Content-Length: ${BODY.length}\r\nX-Bad: a\x01b\r\n`),
    status: 400,
    message: 'Bad Request'
  },
  {
    name: 'both Content-Length and Transfer-Encoding (request smuggling)',
    request: post(`Content-Length: ${BODY.length}\r\nTransfer-Encoding: chunked\r\n`),
    status: 400,
    message: 'Bad Request'
  },
  {
    name: 'two different Content-Length headers',
    request: post(`Content-Length: ${BODY.length}\r\nContent-Length: 3\r\n`),
    status: 400,
    message: 'Bad Request'
  },
  {
    name: 'headers larger than 16 KiB',
    request: post(`Content-Length: ${BODY.length}\r\nX-Big: ${'a'.repeat(20000)}\r\n`),
    status: 431,
    message: 'Request Header Fields Too Large'
  },
  {
    name: 'a bad chunk size',
    request: post('Transfer-Encoding: chunked\r\n').replace(BODY, 'zz\r\nabc\r\n0\r\n\r\n'),
    status: 400,
    message: 'Bad Request'
  },
  {
    name: 'an HTTP version that does not exist (Node\'s parser refuses it)',
    request: 'GET /livez HTTP/9.9\r\nHost: x\r\n\r\n',
    status: 400,
    message: 'Bad Request'
  },
  {
    name: 'HTTP/1.2, a version Node\'s parser refuses',
    request: 'GET /livez HTTP/1.2\r\nHost: x\r\n\r\n',
    status: 400,
    message: 'Bad Request'
  },
  {
    name: 'the HTTP/2 connection preface (HTTP/2 with prior knowledge, in cleartext)',
    request: 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
    status: 400,
    message: 'Bad Request'
  }
]

describe('malformed HTTP on a real socket', () => {
  for (const { name, request, status, message } of cases) {
    it(`answers ${status} Error for ${name}, and never reaches the route`, async () => {
      const repository = countingRepository()
      const app = await buildTestApp({ repository })
      await app.listen({ port: 0, host: '127.0.0.1' })
      const { port } = app.server.address() as AddressInfo

      const reply = parseRawReply(await rawExchange(port, request))
      expect(reply.status).toBe(status)
      expect(reply.headers['content-type']).toBe('application/json; charset=utf-8')
      expect(reply.headers['x-content-type-options']).toBe('nosniff')
      expect(reply.headers.connection).toBe('close')
      expect(JSON.parse(reply.body)).toEqual({ error: status, message })
      expect(repository.inserts).toBe(0)
    })
  }

  it('answers 400 Error for a URL with bad percent-encoding, and never reaches the route', async () => {
    const repository = countingRepository()
    const app = await buildTestApp({ repository })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo

    const reply = parseRawReply(await rawExchange(port, post(`Content-Length: ${BODY.length}\r\nConnection: close\r\n`).replace('/plants', '/plants%zz')))
    expect(reply.status).toBe(400)
    expect(JSON.parse(reply.body)).toEqual({ error: 400, message: "'/plants%zz' is not a valid url component" })
    expect(reply.headers['x-content-type-options']).toBe('nosniff')
    expect(repository.inserts).toBe(0)
  })

  it('still serves a well-formed request on the same server afterwards', async () => {
    const repository = countingRepository()
    const app = await buildTestApp({ repository })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    await rawExchange(port, 'GARBAGE\r\n\r\n')
    const reply = parseRawReply(await rawExchange(port, post(`Content-Length: ${BODY.length}\r\nConnection: close\r\n`)))
    expect(reply.status).toBe(200)
    expect(JSON.parse(reply.body)).toEqual({ name: 'fern' })
    expect(repository.inserts).toBe(1)
  })
})
