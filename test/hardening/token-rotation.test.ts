import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { startServer, type ServerProcess } from '../e2e/server-process.js'
import { until } from './hardening-helpers.js'

function post (port: number, token: string, id: number, agent?: Agent): Promise<number> {
  const payload = JSON.stringify({ id, name: 'fern' })
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, path: '/plants', method: 'POST', ...(agent === undefined ? {} : { agent }),
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
    }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end(payload)
  })
}

const messages = (server: ServerProcess, from: number) =>
  server.stdout.slice(from).map((line) => JSON.parse(line) as { level: number, msg: string, reason?: string })

describe('token rotation with API_TOKENS_FILE (built server)', () => {
  it('reloads on SIGHUP without a restart and without failing requests in flight; refuses a reload that would leave no token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-tokens-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'tokens')
    writeFileSync(file, 'old-token\nstable-token\n')
    const server = await startServer({ API_TOKENS_FILE: file })
    const { port } = server
    let id = 0

    expect(await post(port, 'old-token', ++id)).toBe(200)
    expect(await post(port, 'new-token', ++id)).toBe(401)

    // Load with the token that both sets contain, across the reload: none may fail.
    const agent = new Agent({ keepAlive: true, maxSockets: 10 })
    onTestFinished(() => agent.destroy())
    let stop = false
    const statuses: number[] = []
    const load = Promise.all(Array.from({ length: 10 }, async () => {
      for (let n = 0; n < 5000 && !stop; n++) statuses.push(await post(port, 'stable-token', 1000 + ++id, agent))
    }))
    await until(() => statuses.length > 200, 10000, 'load running')

    let from = server.stdout.length
    writeFileSync(file, 'new-token\nstable-token\n')
    server.child.kill('SIGHUP')
    await until(() => messages(server, from).some((m) => m.msg === 'tokens reloaded'), 10000, 'tokens reloaded')
    const sentBefore = statuses.length
    await until(() => statuses.length > sentBefore + 200, 10000, 'load after the reload')
    stop = true
    await load
    expect(statuses.every((status) => status === 200)).toBe(true)

    expect(await post(port, 'new-token', ++id)).toBe(200)
    expect(await post(port, 'old-token', ++id)).toBe(401)
    expect(server.child.exitCode).toBe(null) // SIGHUP did not stop it

    // An empty file would lock every client out: refused, logged, the current set stays.
    from = server.stdout.length
    writeFileSync(file, '\n')
    server.child.kill('SIGHUP')
    await until(() => messages(server, from).some((m) => m.msg.startsWith('tokens not reloaded')), 10000, 'refusal logged')
    const refusal = messages(server, from).find((m) => m.msg.startsWith('tokens not reloaded'))
    expect(refusal?.level).toBe(40) // warn
    expect(refusal?.reason).toContain('API_TOKENS_FILE')
    expect(await post(port, 'new-token', ++id)).toBe(200)

    // So would a missing file.
    from = server.stdout.length
    rmSync(file)
    server.child.kill('SIGHUP')
    await until(() => messages(server, from).some((m) => m.msg.startsWith('tokens not reloaded') && m.reason?.includes('ENOENT') === true), 10000, 'refusal logged')
    expect(await post(port, 'new-token', ++id)).toBe(200)

    // No log line carries a token.
    expect(server.stdout.join('\n')).not.toMatch(/old-token|new-token|stable-token/)

    server.child.kill('SIGTERM')
    expect(await server.exited).toEqual({ code: 0, signal: null })
  }, 40000)

  it('reloads when the file changes, without a signal', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-tokens-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'tokens')
    writeFileSync(file, 'old-token\n')
    const server = await startServer({ API_TOKENS_FILE: file })
    const from = server.stdout.length
    writeFileSync(file, 'rotated-token-with-another-length\n')
    // The file is polled every 2 s.
    await until(() => messages(server, from).some((m) => m.msg === 'tokens reloaded'), 10000, 'tokens reloaded')
    expect(await post(server.port, 'rotated-token-with-another-length', 1)).toBe(200)
    expect(await post(server.port, 'old-token', 2)).toBe(401)
  }, 20000)

  it('treats SIGHUP as "nothing to reload" when the tokens come from API_TOKENS, and keeps running', async () => {
    const server = await startServer({ API_TOKENS: 'a-token' })
    const from = server.stdout.length
    server.child.kill('SIGHUP')
    await until(() => messages(server, from).some((m) => m.msg.startsWith('SIGHUP: nothing to reload')), 10000, 'SIGHUP logged')
    expect(await post(server.port, 'a-token', 1)).toBe(200)
  })
})
