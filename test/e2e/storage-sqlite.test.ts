import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createUntilKilled, mapConcurrently, postPlant, runServerToExit, startServer } from './storage-process.js'

const dir = mkdtempSync(join(tmpdir(), 'plant-store-e2e-sqlite-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('built server on SQLite', () => {
  it('keeps every plant that got a 200 through a SIGKILL under concurrent load', { timeout: 60000 }, async () => {
    const env = { DATABASE_URL: `sqlite:${join(dir, 'new-folder', 'plants.db')}` }
    const first = await startServer(env)
    // Small ids and ids beyond 2^53, so both kinds go through the kill.
    const { acknowledged, unanswered } = await createUntilKilled(first, 600, 32, (n) => n % 2 === 0 ? BigInt(n) : 2n ** 62n + BigInt(n))
    expect(acknowledged.length).toBeGreaterThanOrEqual(600)
    expect(unanswered).toBeGreaterThan(0) // the kill came with requests in flight

    const second = await startServer(env)
    const replays = await mapConcurrently(acknowledged, 32, (id) => postPlant(second.url, id, `plant ${id}`))
    expect(replays.filter((reply) => reply.status !== 200)).toEqual([])
    expect(replays.every((reply, i) => (reply.body as { name: string }).name === `plant ${acknowledged[i]}`)).toBe(true)
    const changed = await mapConcurrently(acknowledged, 32, async (id) => (await postPlant(second.url, id, `other ${id}`)).status)
    expect(changed.filter((status) => status !== 409)).toEqual([])
  })

  it('stops the start with one clear line and exit 1 when the path cannot be opened', async () => {
    const { code, stderr } = await runServerToExit({ DATABASE_URL: 'sqlite:/dev/null/plants.db' })
    expect(code).toBe(1)
    expect(stderr).toBe('plant-store: DATABASE_URL: cannot create the folder of the SQLite database /dev/null/plants.db: EEXIST: file already exists, mkdir \'/dev/null\'\n')
  })
})
