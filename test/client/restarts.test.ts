import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it, vi } from 'vitest'
import type { NewPlant } from '../../client/src/index.js'
import { startServer } from '../e2e/server-process.js'
import { clientOf, jsonOf, plantOf } from './built-service.js'
import { recordingFetch, statusCounts } from './recorder.js'

// plant-store-client against the built service (dist/: `npm run build` first), its service killed
// with SIGKILL and restarted while 8 clients create plants on the SQLite store.

const dir = mkdtempSync(join(tmpdir(), 'plant-store-client-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('plant-store-client through restarts of the built service', () => {
  it('restarts: 8 clients create 20,000 plants through 3 kill -9 of a SQLite service: each create resolves, the store holds exactly those, no conflict', {
    timeout: 300000
  }, async () => {
    const file = join(dir, 'restarts.db')
    const env = { DATABASE_URL: `sqlite:${file}` }
    let server = await startServer(env)
    // The restarted process listens where the first did, as under a supervisor: the clients keep their baseUrl.
    const sameAddress = { ...env, PORT: String(server.port) }
    const TOTAL = 20000
    const CLIENTS = 8
    // Small ids and ids past 2^53; a tag on two plants in three.
    const plants: NewPlant[] = Array.from({ length: TOTAL }, (_, n) => ({
      id: n % 2 === 0 ? n : 2n ** 62n + BigInt(n), name: `plant ${n}`, ...(n % 3 !== 0 && { tag: `tag ${n % 7}` })
    }))
    const { fetch, exchanges } = recordingFetch()
    let resolved = 0
    const writers = Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
      // Each writer is its own client, with the default retry settings.
      const client = clientOf(server, { fetch })
      for (let n = c; n < TOTAL; n += CLIENTS) {
        const plant = plants[n] as NewPlant
        expect(await client.create(plant)).toEqual(plantOf(plant))
        resolved++
      }
    }))
    writers.catch(() => {}) // awaited below, after the restarts
    for (const at of [5000, 10000, 15000]) {
      // A writer's failure ends the wait at once.
      await Promise.race([writers, vi.waitFor(() => expect(resolved).toBeGreaterThanOrEqual(at), { timeout: 120000, interval: 5 })])
      server.child.kill('SIGKILL')
      expect((await server.exited).signal).toBe('SIGKILL')
      server = await startServer(sameAddress)
    }
    await writers
    expect(resolved).toBe(TOTAL)

    const counts = statusCounts(exchanges)
    console.info(`restarts: ${TOTAL} creates in ${exchanges.length} requests, replies ${JSON.stringify(counts)}`)
    expect(counts['409']).toBeUndefined()
    // The kills came with requests in flight, and the client's retries carried them through.
    expect(counts.none).toBeGreaterThanOrEqual(3)

    server.child.kill('SIGTERM')
    expect(await server.exited).toEqual({ code: 0, signal: null })
    const db = new Database(file, { readonly: true })
    try {
      const rows = db.prepare('SELECT id, name, tag FROM plants ORDER BY id').safeIntegers().all() as Array<{ id: bigint, name: string, tag: string | null }>
      const stored = rows.map(({ id, name, tag }) => ({ id: jsonOf(id), name, tag }))
      const sent = plants.map(({ id, name, tag }) => ({ id: jsonOf(BigInt(id)), name, tag: tag ?? null }))
        .sort((a, b) => BigInt(a.id) < BigInt(b.id) ? -1 : 1)
      expect(stored.length).toBe(TOTAL)
      expect(stored).toEqual(sent)
    } finally {
      db.close()
    }
  })
})
