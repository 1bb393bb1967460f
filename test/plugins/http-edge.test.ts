import type { ServerResponse } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { describe, expect, it, onTestFinished } from 'vitest'
import { collectAllowedMethods, createHttpEdge, HOST, onlyContinue, replyInFlight } from '../../src/plugins/http-edge.js'
import { createMetrics, UNMATCHED_ROUTE } from '../../src/plugins/metrics.js'
import { parseRawReply, rawExchange, until } from '../hardening/hardening-helpers.js'
import { AUTH, buildTestApp, sampleValue } from '../helpers.js'

describe('HOST, the Host field value pattern (RFC 9112 §3.2, RFC 3986 §3.2.2)', () => {
  it.each(['', 'localhost', 'LOCALHOST', 'localhost:8080', 'localhost:', 'example.com', '127.0.0.1', '127.0.0.1:80', '[::1]', '[::1]:8080', '[2001:db8::1]',
    '[::ffff:127.0.0.1]', '[v1.fe80::a+en1]', '[V7.x]', '[v1F.x]', 'a%20b', 'a%2Fb', "a!$&'()*+,;=b", 'a_b~c-d.e', 'xn--bcher-kva.example'])('accepts %j', (host) => {
    expect(HOST.test(host)).toBe(true)
  })

  it.each(['a b', 'a b@c', 'user@localhost', 'localhost/plants', 'localhost:http', 'localhost:80:80', '::1', '[::1', '::1]', '[]', '[::1]x', '[v1.]', '[vx.a]', '[v1a]',
    'a%2', 'a%zz', 'a%', 'a, b', 'a\tb', 'a"b', 'a<b', 'a\\b', 'host:8o', ':80x'])('refuses %j', (host) => {
    expect(HOST.test(host)).toBe(false)
  })
})

describe('onlyContinue: an Expect field value met by 100 Continue alone', () => {
  it.each(['100-continue', '100-Continue', ' 100-continue ', '100-continue,100-continue', '100-continue, 100-CONTINUE'])('meets %j', (expect_) => {
    expect(onlyContinue(expect_)).toBe(true)
  })

  it.each(['', 'x-fancy', '100-continue, foo', 'foo, 100-continue', '100-continue;x=1', '100-continuex', 'x100-continue', '100-continue,'])('does not meet %j', (expect_) => {
    expect(onlyContinue(expect_)).toBe(false)
  })
})

describe('replyInFlight: the reply malformed bytes on a connection must wait for', () => {
  const reply = (complete: boolean, writableFinished: boolean) => ({ req: { complete }, writableFinished }) as ServerResponse
  const turns = (last: ServerResponse | undefined, previous?: ServerResponse) => ({ last, previous })

  it('is the last reply begun, while it is being written to a request that fully arrived', () => {
    const last = reply(true, false)
    expect(replyInFlight(turns(last, reply(true, false)))).toBe(last)
    expect(replyInFlight(turns(reply(true, true), reply(true, false)))).toBeUndefined()
    expect(replyInFlight(undefined)).toBeUndefined()
    // Forgotten once written.
    expect(replyInFlight(turns(undefined, reply(true, false)))).toBeUndefined()
  })

  it('is the one before when the last request is the one whose body broke, or none', () => {
    const previous = reply(true, false)
    expect(replyInFlight(turns(reply(false, false), previous))).toBe(previous)
    expect(replyInFlight(turns(reply(false, false), reply(true, true)))).toBeUndefined()
    expect(replyInFlight(turns(reply(false, false)))).toBeUndefined()
  })
})

describe('collectAllowedMethods', () => {
  it('lists, per path, the methods of the routes registered after it, in their order, HEAD beside GET, OPTIONS last', async () => {
    const app = Fastify()
    onTestFinished(() => app.close())
    const allowed = collectAllowedMethods(app)
    app.options('/a', () => '')
    app.post('/a', () => '')
    app.get('/b', () => '')
    app.route({ method: ['PUT', 'DELETE'], url: '/c', handler: () => '' })
    app.route({ method: 'PATCH', url: '/c', handler: () => '' })
    await app.ready()
    expect(allowed.get('/a')?.allow).toBe('POST, OPTIONS')
    expect([...allowed.get('/a')?.methods ?? []].sort()).toEqual(['OPTIONS', 'POST'])
    expect(allowed.get('/b')?.allow).toBe('GET, HEAD')
    expect(allowed.get('/c')?.allow).toBe('PUT, DELETE, PATCH')
    expect(allowed.get('/d')).toBeUndefined()
  })
})

describe('the HTTP edge plugin', () => {
  it('is registered as the http-edge plugin, the name other plugins can depend on', async () => {
    expect((await buildTestApp()).hasPlugin('http-edge')).toBe(true)
  })

  it('emits no process warning while it is set up (QUERY is redefined, not added twice)', async () => {
    const warnings: Error[] = []
    const onWarning = (warning: Error) => { warnings.push(warning) }
    process.on('warning', onWarning)
    onTestFinished(() => { process.removeListener('warning', onWarning) })
    const app = Fastify()
    onTestFinished(() => app.close())
    await app.register((await createHttpEdge()).plugin)
    await app.ready()
    // Process warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve))
    expect(warnings.map((warning) => warning.message)).toEqual([])
  })

  it('answers 405 with the Allow of /livez to GET /livez\'s other methods, and leaves a CORS preflight to the CORS policy', async () => {
    const app = await buildTestApp({ config: { corsOrigins: ['https://app.example.com'] } })
    const plain = await app.inject({ method: 'OPTIONS', url: '/livez' })
    expect(plain.statusCode).toBe(405)
    expect(plain.headers.allow).toBe('GET, HEAD')
    const preflight = await app.inject({ method: 'OPTIONS', url: '/livez', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' } })
    expect(preflight.statusCode).toBe(204)
    expect(preflight.headers['access-control-allow-origin']).toBe('https://app.example.com')
  })

  it('counts Host header lines by name: a header whose value reads "Host" is no second Host', async () => {
    const app = await buildTestApp()
    const reply = await app.inject({ method: 'GET', url: '/livez', headers: { host: 'a b', 'x-note': 'Host' } })
    expect(reply.json()).toEqual({ error: 400, message: 'the Host header "a b" is not a valid host[:port]' })
  })

  it('answers the 405 on /plants without a token and before the body, with the Allow that OPTIONS /plants answers', async () => {
    const app = await buildTestApp({ bodyLimit: 10 })
    const options = await app.inject({ method: 'OPTIONS', url: '/plants' })
    const put = await app.inject({ method: 'PUT', url: '/plants', headers: { ...AUTH, 'content-type': 'application/json' }, payload: '{"id":1,"name":"far too long for the limit"}' })
    expect(put.statusCode).toBe(405)
    expect(put.headers.allow).toBe(options.headers.allow)
    expect(put.json()).toEqual({ error: 405, message: 'PUT is not allowed on /plants; allowed: POST, OPTIONS' })
  })
})

describe('the edge\'s replies outside the hooks', () => {
  it('counts a bad URL\'s reply as an unmatched request of its method, of 0 s (Fastify starts no reply clock before routing)', async () => {
    const metrics = createMetrics()
    const app = await buildTestApp({ metrics })
    expect((await app.inject({ method: 'GET', url: '/plants%' })).statusCode).toBe(400)
    const labels = { http_request_method: 'GET', http_route: UNMATCHED_ROUTE, http_response_status_code: '400' }
    const text = await metrics.exposition.metrics()
    expect(sampleValue(text, 'http_server_request_duration_seconds_count', labels)).toBe(1)
    expect(sampleValue(text, 'http_server_request_duration_seconds_sum', labels)).toBe(0)
  })

  it('counts a reply to malformed HTTP as an unmatched _OTHER request of 0 s, with its status', async () => {
    const metrics = createMetrics()
    const app = await buildTestApp({ metrics })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.server.address() as AddressInfo).port
    expect(parseRawReply(await rawExchange(port, 'GARBAGE\r\n\r\n')).status).toBe(400)
    expect(parseRawReply(await rawExchange(port, `GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'x'.repeat(20000)}\r\n\r\n`)).status).toBe(431)
    const text = await metrics.exposition.metrics()
    for (const status of ['400', '431']) {
      const labels = { http_request_method: '_OTHER', http_route: UNMATCHED_ROUTE, http_response_status_code: status }
      expect(sampleValue(text, 'http_server_request_duration_seconds_count', labels), status).toBe(1)
      expect(sampleValue(text, 'http_server_request_duration_seconds_sum', labels), status).toBe(0)
    }
  })

  it('logs a CONNECT\'s 400 as an access line of 0 ms with its request id, and counts it as a CONNECT of 0 s', async () => {
    const metrics = createMetrics()
    const logLines: string[] = []
    const app = await buildTestApp({ metrics, logLines })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const reply = parseRawReply(await rawExchange((app.server.address() as AddressInfo).port, 'CONNECT x:80 HTTP/1.1\r\nHost: x:80\r\n\r\n'))
    expect(reply.status).toBe(400)
    const lines = logLines.map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(lines.filter((line) => line.method === 'CONNECT')).toMatchObject([{ reqId: reply.headers['x-request-id'], method: 'CONNECT', status: 400, ms: 0, msg: 'request' }])
    const labels = { http_request_method: 'CONNECT', http_route: UNMATCHED_ROUTE, http_response_status_code: '400' }
    const text = await metrics.exposition.metrics()
    expect(sampleValue(text, 'http_server_request_duration_seconds_count', labels)).toBe(1)
    expect(sampleValue(text, 'http_server_request_duration_seconds_sum', labels)).toBe(0)
  })

  it('closes the connection after a 505 even when the request asks to keep it alive', async () => {
    const app = await buildTestApp()
    await app.listen({ port: 0, host: '127.0.0.1' })
    const reply = parseRawReply(await rawExchange((app.server.address() as AddressInfo).port, 'GET /livez HTTP/2.0\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n'))
    expect(reply.status).toBe(505)
    expect(reply.headers.connection).toBe('close')
  })

  it('answers a bad URL in an HTTP/2.0 request line with the 505, as any other request in that version', async () => {
    const app = await buildTestApp()
    await app.listen({ port: 0, host: '127.0.0.1' })
    const reply = parseRawReply(await rawExchange((app.server.address() as AddressInfo).port, 'GET /plants%zz HTTP/2.0\r\nHost: localhost\r\n\r\n'))
    expect(reply.status).toBe(505)
    expect(reply.headers['x-request-id']).toMatch(/^\S+$/)
    expect(JSON.parse(reply.body)).toEqual({ error: 505, message: 'HTTP/2.0 is not supported: send HTTP/1.1' })
  })

  // Node 24 reports this reset as ECONNRESET; Node 22 as HPE_INVALID_EOF_STATE on a socket that still
  // looks writable, so the 400 is attempted there and its write fails: counted only once written.
  it('does not count a connection reset in the middle of a request as a reply (Node 22 sees it as an early end, Node 24 as a reset)', async () => {
    const metrics = createMetrics()
    const app = await buildTestApp({ metrics })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const connections = () => new Promise<number>((resolve) => { app.server.getConnections((_error, count) => { resolve(count) }) })
    const socket = connect((app.server.address() as AddressInfo).port, '127.0.0.1')
    socket.on('error', () => {})
    await new Promise((resolve) => socket.write('POST /plants HTTP/1.1\r\nHost: loc', resolve))
    await until(async () => await connections() === 1, 5000, 'the server has the connection')
    socket.resetAndDestroy()
    await until(async () => await connections() === 0, 5000, 'the server dropped the connection')
    expect(await metrics.exposition.metrics()).not.toContain('http_server_request_duration_seconds_count{')
  })
})
