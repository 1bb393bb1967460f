import { describe, expect, it } from 'vitest'
import { PlantStoreError, type NewPlant } from '../../client/src/index.js'
import { E2E_TOKEN, startServer } from '../e2e/storage-process.js'
import { clientOf, jsonOf } from './built-service.js'
import { recordingFetch } from './recorder.js'

// plant-store-client against the built service (dist/: `npm run build` first): ids at the ends of int64,
// and what the client refuses before sending compared with what the service answers to the same JSON.

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
      expect(refused).toMatchObject({ kind: 'invalid', status: 400, error: 400, attempts: 0 })
    }
    expect(exchanges).toEqual([])
  })
})
