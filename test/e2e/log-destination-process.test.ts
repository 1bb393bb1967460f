import { Agent, request } from 'node:http'
import { describe, expect, it } from 'vitest'
import { E2E_TOKEN, startServer } from './server-process.js'

// The built server's stdout (pino.destination, asynchronous, wired in src/main.ts) as a real pipe that
// fills up: what only a process can show. A reader that falls behind for long: slow-log-reader.test.ts.

/** Creates `count` plants, 50 at a time, then closes its connections so that the server closes at once. */
async function createPlants (port: number, count: number): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 50 })
  const one = (id: number) => new Promise<number>((resolve, reject) => {
    const body = JSON.stringify({ id, name: 'fern' })
    const headers = { authorization: `Bearer ${E2E_TOKEN}`, 'content-type': 'application/json', 'content-length': body.length }
    request({ port, host: '127.0.0.1', method: 'POST', path: '/plants', agent, headers }, (res) => {
      res.resume().on('end', () => { resolve(res.statusCode ?? 0) })
    }).on('error', reject).end(body)
  })
  const statuses: number[] = []
  for (let id = 1; id <= count; id += 50) {
    statuses.push(...await Promise.all(Array.from({ length: Math.min(50, count - id + 1) }, (_, n) => one(id + n))))
  }
  agent.destroy()
  return statuses
}

describe('the log destination of the built server', () => {
  it('writes every line once, the last one before the graceful exit included, into a pipe that fills up and is read late', async () => {
    const server = await startServer({})
    const stdout = server.child.stdout
    if (stdout === null) throw new Error('no stdout pipe')
    // Not read while 3,000 access lines (about 750 kB) are written: the pipe takes 64 KiB, the rest waits.
    stdout.pause()
    const statuses = await createPlants(server.port, 3000)
    // Each answered (a 503 when the machine is too busy), each with its access line.
    expect(statuses.filter((status) => status !== 200 && status !== 503)).toEqual([])
    // The process closes and exits while the pipe is still full; its reader comes back a moment later.
    server.child.kill('SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 300))
    stdout.resume()
    expect(await server.exited).toEqual({ code: 0, signal: null })

    const lines = server.stdout.map((line) => JSON.parse(line) as { msg: string, reqId?: string })
    const served = lines.filter((line) => line.msg === 'request').map((line) => line.reqId)
    expect(served).toHaveLength(3000)
    expect(new Set(served).size).toBe(3000)
    expect(lines.at(-1)?.msg).toBe('closing')
  }, 60000)
})
