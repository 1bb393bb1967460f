import { connect, type AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { createMemoryPlantRepository } from '../../src/plants/memory-plant-repository.js'
import type { PlantRepository } from '../../src/plants/plant-repository.js'
import { TOKEN, buildTestApp, until } from '../helpers.js'
import { parseRawReply, rawExchange } from './hardening-helpers.js'

/**
 * A client that half-closes its connection (sends FIN right after its request, then waits to read)
 * has its unanswered requests aborted by Node (`httpAllowHalfOpen` is false): the reply never comes,
 * though the create may already be on its way to the store. This is Node's behaviour, kept, and
 * written down in docs/api.md: the outcome is unknown to that client, and the replay (the identical
 * request again) is the remedy. A client that keeps its connection open until the reply gets it (the
 * edge fuzzer never half-closes).
 */

const BODY = '{"id":7,"name":"fern"}'
const CREATE = `POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ` +
  `${BODY.length}\r\n\r\n${BODY}`

/** A memory store that answers `delayMs` later, as a database would, counting what it really stored. */
function slowRepository (delayMs: number): PlantRepository & { created: number, pending: number } {
  const inner = createMemoryPlantRepository({ maxPlants: 100 })
  const repository = {
    created: 0,
    pending: 0,
    async insert (...args: Parameters<PlantRepository['insert']>) {
      repository.pending++
      await sleep(delayMs)
      const outcome = await inner.insert(...args)
      if (outcome === 'created') repository.created++
      repository.pending--
      return outcome
    },
    ready: () => inner.ready(),
    close: () => inner.close()
  }
  return repository
}

/** Writes the bytes and half-closes at once (FIN), then collects what comes back until the server closes. */
function halfClosingExchange (port: number, bytes: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('error', () => {})
    socket.on('close', () => { resolve(Buffer.concat(chunks).toString('latin1')) })
    socket.end(bytes)
  })
}

describe('a client that half-closes before its reply', () => {
  it('gets no reply to its create (Node aborts the request); the identical replay answers 200, and the plant is stored once', async () => {
    const repository = slowRepository(20)
    const app = await buildTestApp({ repository })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.server.address() as AddressInfo).port

    expect(await halfClosingExchange(port, CREATE)).toBe('')
    // The create may have reached the store all the same: its outcome is unknown to the client.
    await until(() => repository.pending === 0, 5000, 'the store settled')
    expect(repository.created).toBeLessThanOrEqual(1)

    const replay = parseRawReply(await rawExchange(port, CREATE.replace('Host: localhost', 'Host: localhost\r\nConnection: close')))
    expect(replay.status).toBe(200)
    expect(JSON.parse(replay.body)).toEqual({ name: 'fern' })
    expect(repository.created).toBe(1)
  })

  it('gets its reply when it keeps the connection open until the reply (what the edge fuzzer does)', async () => {
    const repository = slowRepository(20)
    const app = await buildTestApp({ repository })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.server.address() as AddressInfo).port
    const reply = parseRawReply(await rawExchange(port, CREATE.replace('Host: localhost', 'Host: localhost\r\nConnection: close')))
    expect(reply.status).toBe(200)
    expect(repository.created).toBe(1)
  })
})
