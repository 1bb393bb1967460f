import { E2E_TOKEN, run, SERVER, type ServerProcess } from './server-process.js'
import { postOverHttp } from '../helpers.js'

/** Runs the built server until it exits by itself (a start that must fail). */
export async function runServerToExit (env: Record<string, string>): Promise<{ code: number | null, stderr: string }> {
  const proc = run(process.execPath, [SERVER], { PORT: '0', HOST: '127.0.0.1', API_TOKENS: E2E_TOKEN, ...env })
  const { code } = await proc.exited
  return { code, stderr: proc.stderr() }
}

export interface Reply {
  status: number
  body: unknown
  headers: Headers
}

/** POST /plants with a JSON text written by hand, so ids beyond 2^53 travel exactly. */
export async function postPlant (url: string, id: bigint, name: string): Promise<Reply> {
  const response = await postOverHttp(url, E2E_TOKEN, `{"id":${id},"name":${JSON.stringify(name)}}`)
  return { status: response.status, body: await response.json(), headers: response.headers }
}

export async function get (url: string, path: string): Promise<Reply> {
  const response = await fetch(`${url}${path}`)
  return { status: response.status, body: await response.json(), headers: response.headers }
}

/** Runs `work` over `items` with at most `concurrency` at a time; results in item order. */
export async function mapConcurrently<T, R> (items: readonly T[], concurrency: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index] as T)
    }
  }))
  return results
}

/**
 * Sends new plants from `concurrency` parallel clients until `acknowledged` holds at least `count`,
 * then SIGKILLs the server with requests still in flight. Returns the ids that got a 200, and how
 * many requests the kill left without a reply.
 */
export function createUntilKilled (server: ServerProcess, count: number, concurrency: number,
  idOf: (n: number) => bigint): Promise<{ acknowledged: bigint[], unanswered: number }> {
  return createUntilDead(server.url, count, concurrency, idOf, async () => {
    server.child.kill('SIGKILL')
    const { signal } = await server.exited
    if (signal !== 'SIGKILL') throw new Error(`server ended with ${signal} instead of SIGKILL`)
  })
}

/**
 * The same for a server this process does not own (a container): `kill` kills it and resolves once
 * it is dead; a `kill` that fails (the server had already died) fails the call.
 */
export async function createUntilDead (url: string, count: number, concurrency: number, idOf: (n: number) => bigint,
  kill: () => Promise<void>): Promise<{ acknowledged: bigint[], unanswered: number }> {
  const acknowledged: bigint[] = []
  let unanswered = 0
  let n = 0
  let killing: Promise<void> | undefined
  // Writers keep sending until a request fails after the kill, so the kill always lands mid-traffic.
  await Promise.all(Array.from({ length: concurrency }, async () => {
    for (;;) {
      const id = idOf(n++)
      try {
        const reply = await postPlant(url, id, `plant ${id}`)
        if (reply.status !== 200) throw new Error(`unexpected ${reply.status} ${JSON.stringify(reply.body)}`)
        acknowledged.push(id)
      } catch (error) {
        if (killing === undefined) throw error
        unanswered++
        return
      }
      if (acknowledged.length >= count && killing === undefined) {
        killing = kill()
        killing.catch(() => {}) // observed below, after the writers stop
      }
    }
  }))
  await killing
  return { acknowledged, unanswered }
}
