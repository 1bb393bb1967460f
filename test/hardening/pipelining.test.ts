import { EventEmitter } from 'node:events'
import type { AddressInfo, Socket } from 'node:net'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { describe, expect, it, vi } from 'vitest'
import { awaitTurn, type Turns } from '../../src/plugins/http-edge.js'
import { TOKEN, buildTestApp } from '../helpers.js'
import { countingRepository, rawExchange, splitReplies } from './hardening-helpers.js'

const BODY_LIMIT = 64

/** A POST /plants with the given body bytes and extra header lines. */
function post (body: string | Buffer, extra = ''): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body
  return Buffer.concat([
    Buffer.from(`POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n${extra}Content-Length: ${bytes.length}\r\n\r\n`),
    bytes
  ])
}

async function listening (logLines?: string[]) {
  const repository = countingRepository()
  const app = await buildTestApp({ repository, bodyLimit: BODY_LIMIT, ...(logLines === undefined ? {} : { logLines }) })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, repository, port: (app.server.address() as AddressInfo).port }
}

const CREATE = '{"id":7,"name":"fern"}'

/** Bodies that fail before validation: Fastify answers them with Connection: close. */
const unparsable: { name: string, request: Buffer, status: number }[] = [
  { name: 'malformed JSON', request: post('{bad'), status: 400 },
  { name: 'invalid UTF-8', request: post(Buffer.from([0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x31, 0x2c, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])), status: 400 },
  { name: 'JSON that is not one text', request: post('{"id":1,"name":"a"}{}'), status: 400 },
  { name: 'a body that is not the gzip it claims', request: post('not gzip at all', 'Content-Encoding: gzip\r\n'), status: 400 },
  { name: 'a body over BODY_LIMIT', request: post(`{"id":1,"name":"${'x'.repeat(BODY_LIMIT)}"}`), status: 413 }
]

describe('pipelined requests on one keep-alive connection (raw socket, both requests in one write)', () => {
  for (const { name, request, status } of unparsable) {
    it(`never processes a create pipelined behind ${name}: one ${status} with Connection: close, nothing stored, the drop in the access log`, async () => {
      const lines: string[] = []
      const { app, repository, port } = await listening(lines)

      const replies = splitReplies(await rawExchange(port, Buffer.concat([request, post(CREATE)])))
      expect(replies.map((reply) => reply.status)).toEqual([status])
      expect(replies[0]?.headers.connection).toBe('close')
      expect(JSON.parse(replies[0]?.body ?? '')).toMatchObject({ error: status })
      expect(repository.inserts).toBe(0)
      // The id is free: the pipelined create was never acted on.
      const later = await app.inject({ method: 'POST', url: '/plants', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, payload: '{"id":7,"name":"moss"}' })
      expect(later.statusCode).toBe(200)

      const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
      expect(entries.filter((entry) => entry.msg === 'request').map((entry) => entry.status)).toEqual([status, 200])
      const dropped = entries.filter((entry) => entry.msg === 'request not processed: an earlier reply closed its connection')
      expect(dropped).toHaveLength(1)
      expect(dropped[0]).toMatchObject({ method: 'POST', route: '/plants', status: null })
      expect(dropped[0]?.reqId).not.toBe(replies[0]?.headers['x-request-id'])
    })
  }

  it('answers both requests, in order, when the first is a validation 400 (the body parsed): the connection is kept', async () => {
    const { repository, port } = await listening()
    const replies = splitReplies(await rawExchange(port, Buffer.concat([post('{"id":"7","name":"fern"}'), post(CREATE, 'Connection: close\r\n')])))
    expect(replies.map((reply) => reply.status)).toEqual([400, 200])
    expect(replies[0]?.headers.connection).not.toBe('close')
    expect(JSON.parse(replies[1]?.body ?? '')).toEqual({ name: 'fern' })
    expect(repository.inserts).toBe(1)
  })

  it('answers three pipelined creates in the order they were sent', async () => {
    const { repository, port } = await listening()
    const replies = splitReplies(await rawExchange(port, Buffer.concat([
      post('{"id":1,"name":"a"}'), post('{"id":1,"name":"b"}'), post('{"id":2,"name":"c"}', 'Connection: close\r\n')
    ])))
    expect(replies.map((reply) => reply.status)).toEqual([200, 409, 200])
    expect(repository.inserts).toBe(3)
  })

  it('never processes a request pipelined behind one that asked for Connection: close', async () => {
    const { repository, port } = await listening()
    const replies = splitReplies(await rawExchange(port, Buffer.concat([post('{"id":1,"name":"a"}', 'Connection: close\r\n'), post('{"id":2,"name":"b"}')])))
    expect(replies.map((reply) => reply.status)).toEqual([200])
    expect(repository.inserts).toBe(1)
  })

  it('answers the creates in flight first, then a 400 Error, when malformed HTTP follows them', async () => {
    const { repository, port } = await listening()
    const replies = splitReplies(await rawExchange(port, Buffer.concat([post('{"id":1,"name":"a"}'), post('{"id":2,"name":"b"}'), Buffer.from('GARBAGE\r\n\r\n')])))
    expect(replies.map((reply) => reply.status)).toEqual([200, 200, 400])
    expect(JSON.parse(replies[2]?.body ?? '')).toEqual({ error: 400, message: 'the request is not valid HTTP' })
    expect(repository.inserts).toBe(2)
  })
})

describe('awaitTurn, for a request whose reply is queued behind another (no socket yet)', () => {
  const NOT_PROCESSED = 'request not processed: an earlier reply closed its connection'

  /** A request on a connection (`destroyed` or not) whose reply has no socket yet, as Node queues it. */
  function queued (destroyed = false) {
    const socket = Object.assign(new EventEmitter(), { destroyed })
    const response = Object.assign(new EventEmitter(), { socket: null })
    const info = vi.fn()
    const request = { raw: { socket }, method: 'POST', routeOptions: { url: '/plants' }, log: { info } } as unknown as FastifyRequest
    const reply = { raw: response } as unknown as FastifyReply
    const proceed = vi.fn()
    awaitTurn(request, reply, new WeakMap(), proceed)
    return { socket, response, info, proceed }
  }

  it('goes on once its reply gets the socket, and never logs a drop when the connection closes after', () => {
    const { socket, response, info, proceed } = queued()
    expect(proceed).not.toHaveBeenCalled()
    response.emit('socket')
    expect(proceed).toHaveBeenCalledTimes(1)
    socket.emit('close')
    expect(info).not.toHaveBeenCalled()
    expect(socket.listenerCount('close')).toBe(0)
  })

  it('drops the request when the connection closes first, logged once, and never goes on after', () => {
    const { socket, response, info, proceed } = queued()
    socket.emit('close')
    expect(info).toHaveBeenCalledTimes(1)
    expect(info).toHaveBeenCalledWith({ method: 'POST', route: '/plants', status: null }, NOT_PROCESSED)
    response.emit('socket')
    expect(proceed).not.toHaveBeenCalled()
    expect(response.listenerCount('socket')).toBe(0)
  })

  it('keeps the last two replies begun on a connection, and forgets each once it is written (no reply outlives its end)', () => {
    const socket = Object.assign(new EventEmitter(), { destroyed: false })
    const turns = new WeakMap<Socket, Turns>()
    const begin = () => {
      const response = Object.assign(new EventEmitter(), { socket: { writable: true } })
      const request = { raw: { socket }, method: 'POST', routeOptions: { url: '/plants' }, log: { info: vi.fn() } } as unknown as FastifyRequest
      awaitTurn(request, { raw: response } as unknown as FastifyReply, turns, () => {})
      return response
    }
    const replies = [begin(), begin(), begin()]
    /** The turn's last and previous reply, as indexes into `replies` (-1: none). */
    const turn = () => [turns.get(socket as unknown as Socket)?.last, turns.get(socket as unknown as Socket)?.previous].map((reply) => replies.indexOf(reply as never))
    expect(turn()).toEqual([2, 1])
    replies[0]?.emit('finish')
    expect(turn()).toEqual([2, 1])
    replies[1]?.emit('finish')
    expect(turn()).toEqual([2, -1])
    replies[2]?.emit('finish')
    expect(turn()).toEqual([-1, -1])
  })

  it('drops the request at once when its connection is already gone (its close will not come again)', () => {
    const { socket, response, info, proceed } = queued(true)
    expect(info).toHaveBeenCalledWith({ method: 'POST', route: '/plants', status: null }, NOT_PROCESSED)
    expect(socket.listenerCount('close')).toBe(0)
    expect(response.listenerCount('socket')).toBe(0)
    expect(proceed).not.toHaveBeenCalled()
  })
})
