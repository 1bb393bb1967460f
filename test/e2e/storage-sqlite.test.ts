import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SERVER, startServer } from './server-process.js'
import { createUntilKilled, mapConcurrently, postPlant, runServerToExit } from './storage-process.js'

/** Loaded with --import: a full garbage collection every 2 ms, from start-up on (needs --expose-gc). */
const FORCED_GC = `data:text/javascript,${encodeURIComponent('setInterval(() => globalThis.gc(), 2).unref()')}`

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
    expect(replays.map((reply) => reply.body)).toEqual(acknowledged.map((id) => ({ name: `plant ${id}` })))
    const changed = await mapConcurrently(acknowledged, 32, async (id) => (await postPlant(second.url, id, `other ${id}`)).status)
    expect(changed.filter((status) => status !== 409)).toEqual([])
  })

  // better-sqlite3 before 13 aborted the process on Node >= 24.19 (`Assertion failed: (env) != nullptr`
  // in node::RemoveEnvironmentCleanupHook, from Statement::~Statement) when a collection finalised a
  // statement: at start-up or under load, in the Docker image. CI runs this on Node 24 and 22.
  it('survives garbage collections forced every 2 ms from start-up through concurrent creates, then exits 0 on SIGTERM (Node ' +
    `${process.versions.node})`, { timeout: 60000 }, async () => {
    const server = await startServer({ DATABASE_URL: `sqlite:${join(dir, 'gc', 'plants.db')}` }, { args: ['--expose-gc', '--import', FORCED_GC, SERVER] })
    const ids = Array.from({ length: 1000 }, (_, n) => BigInt(n + 1))
    const statuses = await mapConcurrently(ids, 32, async (id) => (await postPlant(server.url, id, `plant ${id}`)).status)
    expect(statuses.filter((status) => status !== 200)).toEqual([])
    const replays = await mapConcurrently(ids.slice(0, 100), 32, async (id) => (await postPlant(server.url, id, `plant ${id}`)).status)
    expect(replays.filter((status) => status !== 200)).toEqual([])
    server.child.kill('SIGTERM')
    expect(await server.exited).toEqual({ code: 0, signal: null })
    expect(server.stderr()).toBe('')
  })

  it('stops the start with one clear line and exit 1 when the path cannot be opened', async () => {
    const { code, stderr } = await runServerToExit({ DATABASE_URL: 'sqlite:/dev/null/plants.db' })
    expect(code).toBe(1)
    expect(stderr).toBe('plant-store: DATABASE_URL: cannot open the SQLite database /dev/null/plants.db: EEXIST: file already exists, mkdir \'/dev/null\'\n')
  })
})
