import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { onTestFinished } from 'vitest'

export const E2E_TOKEN = 'storage-e2e-token'
const SERVER = fileURLToPath(new URL('../../dist/server.js', import.meta.url))

export interface ServerProcess {
  url: string
  child: ChildProcess
  /** Resolves when the process has ended, with how it ended. */
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
  stderr: () => string
}

function spawnServer (env: Record<string, string>): { child: ChildProcess, exited: ServerProcess['exited'], stderr: () => string } {
  const child = spawn(process.execPath, [SERVER], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', API_TOKENS: E2E_TOKEN, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }))
  })
  return { child, exited, stderr: () => stderr }
}

/**
 * Starts the built server (`dist/server.js`) on a free port and resolves once it listens, with the
 * address from its "Server listening at" log line. Killed when the test ends if still running.
 */
export async function startServer (env: Record<string, string>): Promise<ServerProcess> {
  const { child, exited, stderr } = spawnServer(env)
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await exited
    }
  })
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })
    lines.on('line', (line) => {
      const found = /Server listening at (http:\/\/[^"\s]+)/.exec(line)
      if (found?.[1] !== undefined) {
        resolve(found[1])
        // Keep draining stdout so the server never blocks on a full pipe.
        lines.removeAllListeners('line')
        lines.on('line', () => {})
      }
    })
    void exited.then(({ code, signal }) => reject(new Error(`server exited (${code ?? signal}) before listening: ${stderr()}`)))
  })
  return { url, child, exited, stderr }
}

/** Runs the built server until it exits by itself (a start that must fail). */
export async function runServerToExit (env: Record<string, string>): Promise<{ code: number | null, stderr: string }> {
  const { child, exited, stderr } = spawnServer(env)
  child.stdout?.resume()
  const { code } = await exited
  return { code, stderr: stderr() }
}

export interface Reply {
  status: number
  body: unknown
  headers: Headers
}

/** POST /plants with a JSON text written by hand, so ids beyond 2^53 travel exactly. */
export async function postPlant (url: string, id: bigint, name: string): Promise<Reply> {
  const response = await fetch(`${url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${E2E_TOKEN}`, 'content-type': 'application/json' },
    body: `{"id":${id},"name":${JSON.stringify(name)}}`
  })
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
export async function createUntilKilled (server: ServerProcess, count: number, concurrency: number, idOf: (n: number) => bigint): Promise<{ acknowledged: bigint[], unanswered: number }> {
  const acknowledged: bigint[] = []
  let unanswered = 0
  let n = 0
  let killed = false
  // Writers keep sending until the process is seen dead, so the kill always lands mid-traffic.
  let dead = false
  void server.exited.then(() => { dead = true })
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (!dead) {
      const id = idOf(n++)
      try {
        const reply = await postPlant(server.url, id, `plant ${id}`)
        if (reply.status !== 200) throw new Error(`unexpected ${reply.status} ${JSON.stringify(reply.body)}`)
        acknowledged.push(id)
      } catch (error) {
        if (!killed) throw error
        unanswered++
        return
      }
      if (acknowledged.length >= count && !killed) {
        killed = true
        server.child.kill('SIGKILL')
      }
    }
  }))
  const { signal } = await server.exited
  if (signal !== 'SIGKILL') throw new Error(`server ended with ${signal} instead of SIGKILL`)
  return { acknowledged, unanswered }
}
