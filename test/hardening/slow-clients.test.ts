import { request } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { TOKEN, buildTestApp, DEFAULT_CONFIG, until } from '../helpers.js'
import { countingRepository, parseRawReply } from './hardening-helpers.js'

const SLOW_CONNECTIONS = 300
const limits = { HEADERS_TIMEOUT_MS: 1000, REQUEST_TIMEOUT_MS: 2000, CONNECTION_TIMEOUT_MS: 5000 }

interface Slow {
  socket: Socket
  opened: number
  closedAfter?: number
  received: string
}

/**
 * A client that sends its request a byte every `everyMs`: the headers (slowloris) or, after full
 * headers, the body. It never finishes within the test.
 */
function openSlow (port: number, kind: 'headers' | 'body', everyMs: number): Slow {
  const body = '{"id":1,"name":"' + 'a'.repeat(2000) + '"}'
  const text = kind === 'headers'
    ? `POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nX-Slow: ${'a'.repeat(2000)}\r\n\r\n`
    : `POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ` +
      `${body.length}\r\n\r\n${body}`
  const socket = connect(port, '127.0.0.1')
  const slow: Slow = { socket, opened: Date.now(), received: '' }
  let at = kind === 'headers' ? 0 : text.indexOf('\r\n\r\n') + 4
  // Written at once (queued until connected), so that no trickled byte can overtake the headers.
  if (kind === 'body') socket.write(text.slice(0, at))
  const timer = setInterval(() => {
    if (!socket.writable || at >= text.length) return
    socket.write(text[at++] ?? '')
  }, everyMs)
  socket.on('data', (chunk) => { slow.received += chunk.toString('latin1') })
  socket.on('error', () => {})
  socket.on('close', () => {
    clearInterval(timer)
    slow.closedAfter = Date.now() - slow.opened
  })
  return slow
}

function getLivez (port: number): Promise<{ status: number, ms: number }> {
  const started = Date.now()
  return new Promise((resolve, reject) => {
    // A new connection, not a pooled one: the question is whether the server still accepts.
    const req = request({ host: '127.0.0.1', port, path: '/livez', agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: Date.now() - started }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('slow clients', () => {
  it(`answers a normal request promptly while ${SLOW_CONNECTIONS} clients trickle headers or bodies, and cuts them off with 408`, async () => {
    const repository = countingRepository()
    const app = await buildTestApp({ repository, config: limits })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo

    const slow: Slow[] = []
    for (let i = 0; i < SLOW_CONNECTIONS; i++) slow.push(openSlow(port, i % 2 === 0 ? 'headers' : 'body', 50))
    await until(() => slow.every((s) => s.socket.bytesWritten > 0), 5000, 'every slow client started sending')

    // The liveness check: not a benchmark, a generous bound for "still answered".
    const live = await getLivez(port)
    expect(live.status).toBe(200)
    expect(live.ms).toBeLessThan(2000)

    // Cut off: headers within headersTimeout, whole requests within requestTimeout, each plus
    // Node's check interval (1 s at most); 6 s is a generous bound.
    await until(() => slow.every((s) => s.closedAfter !== undefined), 8000, 'every slow client cut off')
    const cutAfter = slow.map((s) => s.closedAfter ?? Infinity)
    expect(Math.max(...cutAfter)).toBeLessThan(6000)
    for (const s of slow) {
      const reply = parseRawReply(s.received)
      expect(reply.status).toBe(408)
      expect(JSON.parse(reply.body)).toEqual({ error: 408, message: 'Request Timeout' })
    }
    expect(repository.inserts).toBe(0)
    console.log(`slow clients: ${SLOW_CONNECTIONS} open; /livez on a new connection in ${live.ms} ms; cut off after ` +
      `${Math.min(...cutAfter)}–${Math.max(...cutAfter)} ms`)
  }, 30000)

  it('closes a connection that sends nothing at all after connectionTimeout', async () => {
    const app = await buildTestApp({ config: { ...limits, CONNECTION_TIMEOUT_MS: 300, HEADERS_TIMEOUT_MS: 5000, REQUEST_TIMEOUT_MS: 5000 } })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    const socket = connect(port, '127.0.0.1')
    const opened = Date.now()
    const closedAfter = await new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now() - opened)))
    expect(closedAfter).toBeGreaterThanOrEqual(250)
    expect(closedAfter).toBeLessThan(3000)
  })

  it('uses the documented defaults', () => {
    expect(DEFAULT_CONFIG).toMatchObject({
      HEADERS_TIMEOUT_MS: 10000,
      REQUEST_TIMEOUT_MS: 15000,
      CONNECTION_TIMEOUT_MS: 30000,
      KEEP_ALIVE_TIMEOUT_MS: 72000,
      MAX_HEADER_BYTES: 16384
    })
  })
})
