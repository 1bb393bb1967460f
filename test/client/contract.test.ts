import { describe, expect, it } from 'vitest'
import { PlantStoreError, type NewPlant } from '../../client/src/index.js'
import { E2E_TOKEN, startServer } from '../e2e/server-process.js'
import { clientOf, jsonOf } from './built-service.js'
import { recordingFetch } from './recorder.js'

// plant-store-client against the built service (dist/: `npm run build` first): ids at the ends of int64,
// what the client refuses before sending compared with what the service answers to the same JSON, and
// one create's retries tied together in the service's log by their request id.

describe('plant-store-client and the service\'s contract', () => {
  it('int64: 9223372036854775807n and -9223372036854775808n round-trip exactly, and 2^53 + 1 is not 2^53', async () => {
    const server = await startServer({})
    const client = clientOf(server)
    for (const id of [9223372036854775807n, -9223372036854775808n]) {
      expect(await client.create({ id, name: `extreme ${id}` })).toEqual({ name: `extreme ${id}` })
      expect(await client.create({ id, name: `extreme ${id}` })).toEqual({ name: `extreme ${id}` })
      // The service names the id it holds: the exact digits sent.
      const error = await client.create({ id, name: 'another' }).catch((error: unknown) => error)
      expect(error).toMatchObject({ kind: 'conflict', status: 409, error: 409, message: `a plant with id ${id} already exists with another name or tag` })
    }
    expect(await client.create({ id: 9007199254740993n, name: 'odd' })).toEqual({ name: 'odd' })
    expect(await client.create({ id: 9007199254740992n, name: 'even' })).toEqual({ name: 'even' })
  })

  it('bad input: what the contract refuses is refused before any request, in the words of the service\'s own 400', async () => {
    const server = await startServer({})
    const { fetch, exchanges } = recordingFetch()
    const client = clientOf(server, { fetch })
    const plants: unknown[] = [
      { id: 1.5, name: 'fern' }, { id: '1', name: 'fern' }, { name: 'fern' }, { id: 1 }, { id: 2n ** 63n, name: 'fern' },
      { id: -(2n ** 63n) - 1n, name: 'fern' }, { id: 1, name: 7 }, { id: 1, name: 'fern', tag: null }, { id: 1, name: 'a\u0000b' },
      { id: 1, name: 'fern', tag: 'x\uDC00' }, [{ id: 1, name: 'fern' }], null, 'fern'
    ]
    for (const plant of plants) {
      const refused = await client.create(plant as NewPlant).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(PlantStoreError)
      const response = await globalThis.fetch(`${server.url}/plants`, {
        method: 'POST', headers: { authorization: `Bearer ${E2E_TOKEN}`, 'content-type': 'application/json' }, body: jsonOf(plant)
      })
      const service = await response.json() as { message: string }
      expect({ status: response.status, message: service.message }, jsonOf(plant)).toEqual({ status: 400, message: (refused as PlantStoreError).message })
      expect(refused).toMatchObject({ kind: 'invalid', status: undefined, error: undefined, attempts: 0 })
    }
    expect(exchanges).toEqual([])
  })

  it('retries a create whose reply a proxy lost (502, then 504) under one request id, which ties the attempts together in the service\'s log', async () => {
    const server = await startServer({})
    const lost = [502, 504]
    // A proxy that forwards the create, then loses the service's reply: the outcome is unknown to the client.
    const proxy: typeof fetch = async (input, init) => {
      const response = await fetch(input, init)
      const status = lost.shift()
      if (status === undefined) return response
      await response.text()
      return new Response(`<h1>${status}</h1>`, { status, headers: { 'content-type': 'text/html' } })
    }
    const done: Array<{ attempts: number, requestId: string }> = []
    const client = clientOf(server, {
      fetch: proxy, retry: { baseDelayMs: 1, maxDelayMs: 1 }, onSuccess: ({ attempts, requestId }) => { done.push({ attempts, requestId }) }
    })
    expect(await client.create({ id: 77n, name: 'traced' })).toEqual({ name: 'traced' })
    expect(done).toHaveLength(1)
    const { attempts, requestId } = done[0] as { attempts: number, requestId: string }
    expect(attempts).toBe(3)
    const lines = () => server.stdout.map((line) => JSON.parse(line) as { reqId?: string, status?: number }).filter((line) => line.reqId === requestId)
    await expect.poll(() => lines().length).toBe(3)
    // Stored by the first attempt, found stored by the two replays: all three under the id the client chose.
    expect(lines().map((line) => line.status)).toEqual([200, 200, 200])
  })
})
