import { connect, type AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { TOKEN, buildTestApp } from '../helpers.js'
import { countingRepository, parseRawReply, rawExchange, splitReplies } from './hardening-helpers.js'

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

  for (const expect100 of ['100-continue, foo', 'foo, 100-continue', '100-continue;x=1']) {
    it(`answers 417 Error, with no 100 Continue, to "Expect: ${expect100}" with a valid token (an expectation besides 100-continue), and stores nothing`, async () => {
      const { repository, port } = await listening()
      const text = await rawExchange(port, request(`POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nExpect: ${expect100}`, BODY))
      expectErrorRecord(parseRawReply(text), 417, `the expectation "${expect100}" cannot be met: send no Expect header, or Expect: 100-continue`)
      expect(repository.inserts).toBe(0)
    })
  }

  it('quotes only the first 100 characters of a long expectation in the 417 message', async () => {
    const { port } = await listening()
    const long = `x-${'e'.repeat(98)}${'f'.repeat(300)}`
    const text = await rawExchange(port, request(`GET /livez HTTP/1.1\r\nHost: localhost\r\nExpect: ${long}`))
    expectErrorRecord(parseRawReply(text), 417, `the expectation "x-${'e'.repeat(98)}" cannot be met: send no Expect header, or Expect: 100-continue`)
  })

  it('meets "Expect: 100-Continue, 100-continue" (every member is 100-continue, any case): 100 Continue, then the 200', async () => {
    const { repository, port } = await listening()
    const text = await rawExchange(port, request(`POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nExpect: 100-Continue, 100-continue`, BODY))
    expect(text.startsWith('HTTP/1.1 100 Continue\r\n\r\n')).toBe(true)
    expect(parseRawReply(text.slice('HTTP/1.1 100 Continue\r\n\r\n'.length)).status).toBe(200)
    expect(repository.inserts).toBe(1)
  })

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
    ['/livez', 405, 'QUERY is not allowed on /livez; allowed: GET, HEAD'],
    ['/plants', 405, 'QUERY is not allowed on /plants; allowed: POST, OPTIONS']
  ] as const) {
    it(`answers ${status} Error on ${path}, as any other method there, not a 400 about its Content-Type`, async () => {
      const { repository, port } = await listening()
      const reply = parseRawReply(await rawExchange(port, request(`QUERY ${path} HTTP/1.1\r\nHost: localhost`)))
      expectErrorRecord(reply, status, message)
      if (status === 405) expect(reply.headers.allow).toBe(path === '/plants' ? 'POST, OPTIONS' : 'GET, HEAD')
      expect(repository.inserts).toBe(0)
    })
  }

  it('answers 404 Error on an unknown path for a QUERY with a JSON body too (its content is never read)', async () => {
    const { port } = await listening()
    expectErrorRecord(parseRawReply(await rawExchange(port, request('QUERY /nope HTTP/1.1\r\nHost: localhost', BODY))), 404, 'no route for QUERY /nope')
  })
})

describe('Host (RFC 9112 §3.2)', () => {
  for (const [name, hosts, message] of [
    ['two Host headers', ['localhost', 'example.com'], 'the request carries 2 Host headers: send exactly one'],
    ['the same Host twice', ['localhost', 'localhost'], 'the request carries 2 Host headers: send exactly one'],
    ['two empty Host headers', ['', ''], 'the request carries 2 Host headers: send exactly one'],
    ['a Host with a space and userinfo', ['a b@c'], 'the Host header "a b@c" is not a valid host[:port]'],
    ['a Host with userinfo', ['user@localhost'], 'the Host header "user@localhost" is not a valid host[:port]'],
    ['a Host with a path', ['localhost/plants'], 'the Host header "localhost/plants" is not a valid host[:port]'],
    ['a Host with a port that is not a number', ['localhost:http'], 'the Host header "localhost:http" is not a valid host[:port]'],
    ['an IPv6 address without brackets', ['::1'], 'the Host header "::1" is not a valid host[:port]']
  ] as const) {
    for (const [target, body] of [['POST /plants', BODY], ['GET /livez', '']] as const) {
      it(`answers 400 Error to ${target} with ${name}, with a request id, and stores nothing`, async () => {
        const { repository, port } = await listening()
        const head = `${target} HTTP/1.1\r\n${hosts.map((host) => `Host: ${host}`).join('\r\n')}\r\nAuthorization: Bearer ${TOKEN}`
        expectErrorRecord(parseRawReply(await rawExchange(port, request(head, body))), 400, message)
        expect(repository.inserts).toBe(0)
      })
    }
  }

  for (const host of ['', 'localhost', 'localhost:8080', '127.0.0.1:80', '[::1]:8080', '[v1.fe80::a+en1]', 'xn--bcher-kva.example', 'a%20b', "a!$&'()*+,;=b", 'host:']) {
    it(`serves a valid Host ${JSON.stringify(host)}`, async () => {
      const { repository, port } = await listening()
      const reply = parseRawReply(await rawExchange(port, request(`POST /plants HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${TOKEN}`, BODY)))
      expect(reply.status).toBe(200)
      expect(repository.inserts).toBe(1)
    })
  }

  it('quotes only the first 100 characters of a long invalid Host in the 400 message', async () => {
    const { port } = await listening()
    const host = `a b@${'h'.repeat(96)}${'z'.repeat(300)}`
    const reply = parseRawReply(await rawExchange(port, request(`GET /livez HTTP/1.1\r\nHost: ${host}`)))
    expectErrorRecord(reply, 400, `the Host header "a b@${'h'.repeat(96)}" is not a valid host[:port]`)
  })

  it('checks the Host of an HTTP/1.0 request too, when it has one', async () => {
    const { port } = await listening()
    expectErrorRecord(parseRawReply(await rawExchange(port, 'GET /livez HTTP/1.0\r\nHost: a b@c\r\n\r\n')), 400, 'the Host header "a b@c" is not a valid host[:port]')
  })
})

describe('CONNECT (answered 400: this service is not a proxy, and the target of a CONNECT is no resource of it)', () => {
  for (const target of ['x:80', 'localhost:443', '/plants', '/livez']) {
    it(`answers CONNECT ${target} with a 400 Error record and a request id, then closes, never reading what follows`, async () => {
      const { repository, port } = await listening()
      // A create pipelined behind the CONNECT: never processed (the connection closes after the 400).
      const create = `POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`
      const replies = splitReplies(await rawExchange(port, `CONNECT ${target} HTTP/1.1\r\nHost: ${target.startsWith('/') ? 'localhost' : target}\r\n\r\n${create}`))
      expect(replies).toHaveLength(1)
      expectErrorRecord(replies[0] as ReturnType<typeof parseRawReply>, 400, 'CONNECT is not supported: this service is not a proxy')
      expect((replies[0] as ReturnType<typeof parseRawReply>).headers.connection).toBe('close')
      expect(repository.inserts).toBe(0)
    })
  }

  it('survives a client that resets the connection right after its CONNECT', async () => {
    const { port } = await listening()
    await new Promise<void>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.write('CONNECT x:80 HTTP/1.1\r\nHost: x:80\r\n\r\n')
        socket.resetAndDestroy()
        resolve()
      })
    })
    expect(parseRawReply(await rawExchange(port, 'GET /livez HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')).status).toBe(200)
  })
})

describe('a request line in another version than HTTP/1.x, in cleartext', () => {
  for (const version of ['2.0', '0.9']) {
    it(`answers HTTP/${version} with a 505 Error record (not a 200 as HTTP/1.1), never reaching the route, and closes`, async () => {
      const { repository, port } = await listening()
      const reply = parseRawReply(await rawExchange(port, `POST /plants HTTP/${version}\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`))
      expectErrorRecord(reply, 505, `HTTP/${version} is not supported: send HTTP/1.1`)
      expect(reply.headers.connection).toBe('close')
      expect(repository.inserts).toBe(0)
    })
  }

  it('answers a request line without a version (HTTP/0.9\'s form, as a fuzzer sent it: "POST /plants!HTTP/1.1") with the 505 of HTTP/0.9, storing nothing', async () => {
    const { repository, port } = await listening()
    const reply = parseRawReply(await rawExchange(port, `POST /plants!HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`))
    expectErrorRecord(reply, 505, 'HTTP/0.9 is not supported: send HTTP/1.1')
    expect(reply.headers.connection).toBe('close')
    expect(repository.inserts).toBe(0)
  })

  it('serves HTTP/1.0 and HTTP/1.1', async () => {
    const { port } = await listening()
    for (const version of ['1.0', '1.1']) {
      expect(parseRawReply(await rawExchange(port, `GET /livez HTTP/${version}\r\nHost: localhost\r\nConnection: close\r\n\r\n`)).status, version).toBe(200)
    }
  })
})

describe('other methods on the probes', () => {
  for (const path of ['/livez', '/readyz']) {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'PROPFIND']) {
      it(`answers ${method} ${path} with 405 and Allow: GET, HEAD (not a 404)`, async () => {
        const { port } = await listening()
        const reply = parseRawReply(await rawExchange(port, request(`${method} ${path} HTTP/1.1\r\nHost: localhost`, method === 'TRACE' ? '' : BODY)))
        expectErrorRecord(reply, 405, `${method} is not allowed on ${path}; allowed: GET, HEAD`)
        expect(reply.headers.allow).toBe('GET, HEAD')
      })
    }
  }
})
