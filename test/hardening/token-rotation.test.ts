import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { SERVER, run, startServer, type ServerProcess } from '../e2e/server-process.js'
import { until } from '../helpers.js'

/** POSTs a plant with `token`; node:http, not helpers.ts's fetch, so that keep-alive clients go through `agent`. */
function post (port: number, token: string, id: number, agent?: Agent): Promise<number> {
  const payload = JSON.stringify({ id, name: 'fern' })
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/plants',
      method: 'POST',
      ...(agent === undefined ? {} : { agent }),
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
    writeFileSync(file, 'old-token-0123456789\nstable-token-0123456789\n')
    const server = await startServer({ API_TOKENS_FILE: file })
    const { port } = server
    let id = 0

    expect(await post(port, 'old-token-0123456789', ++id)).toBe(200)
    expect(await post(port, 'new-token-0123456789', ++id)).toBe(401)

    // Load with the token that both sets contain, across the reload: none may fail.
    const agent = new Agent({ keepAlive: true, maxSockets: 10 })
    onTestFinished(() => agent.destroy())
    let stop = false
    const statuses: number[] = []
    const load = Promise.all(Array.from({ length: 10 }, async () => {
      for (let n = 0; n < 5000 && !stop; n++) statuses.push(await post(port, 'stable-token-0123456789', 1000 + ++id, agent))
    }))
    await until(() => statuses.length > 200, 10000, 'load running')

    let from = server.stdout.length
    writeFileSync(file, 'new-token-0123456789\nstable-token-0123456789\n')
    server.child.kill('SIGHUP')
    await until(() => messages(server, from).some((m) => m.msg === 'tokens reloaded'), 10000, 'tokens reloaded')
    const sentBefore = statuses.length
    await until(() => statuses.length > sentBefore + 200, 10000, 'load after the reload')
    stop = true
    await load
    expect(statuses.filter((status) => status !== 200)).toEqual([])

    expect(await post(port, 'new-token-0123456789', ++id)).toBe(200)
    expect(await post(port, 'old-token-0123456789', ++id)).toBe(401)
    expect(server.child.exitCode).toBe(null) // SIGHUP did not stop it

    // An empty file would lock every client out: refused, logged, the current set stays.
    from = server.stdout.length
    writeFileSync(file, '\n')
    server.child.kill('SIGHUP')
    await until(() => messages(server, from).some((m) => m.msg.startsWith('tokens not reloaded')), 10000, 'refusal logged')
    const refusal = messages(server, from).find((m) => m.msg.startsWith('tokens not reloaded'))
    expect(refusal?.level).toBe(40) // warn
    expect(refusal?.reason).toContain('API_TOKENS_FILE')
    expect(await post(port, 'new-token-0123456789', ++id)).toBe(200)

    // So would a missing file.
    from = server.stdout.length
    rmSync(file)
    server.child.kill('SIGHUP')
    await until(
      () => messages(server, from).some((m) => m.msg.startsWith('tokens not reloaded') && m.reason?.includes('ENOENT') === true),
      10000, 'refusal logged')
    expect(await post(port, 'new-token-0123456789', ++id)).toBe(200)

    // No log line carries a token.
    expect(server.stdout.join('\n')).not.toMatch(/old-token-0123456789|new-token-0123456789|stable-token-0123456789/)

    server.child.kill('SIGTERM')
    expect(await server.exited).toEqual({ code: 0, signal: null })
  }, 40000)

  it('reloads when the file changes, without a signal', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-tokens-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'tokens')
    writeFileSync(file, 'old-token-0123456789\n')
    const server = await startServer({ API_TOKENS_FILE: file })
    const from = server.stdout.length
    writeFileSync(file, 'rotated-token-with-another-length\n')
    // The file is polled every 2 s.
    await until(() => messages(server, from).some((m) => m.msg === 'tokens reloaded'), 10000, 'tokens reloaded')
    expect(await post(server.port, 'rotated-token-with-another-length', 1)).toBe(200)
    expect(await post(server.port, 'old-token-0123456789', 2)).toBe(401)
  }, 20000)

  it('treats SIGHUP as "nothing to reload" when the tokens come from API_TOKENS, and keeps running', async () => {
    const server = await startServer({ API_TOKENS: 'a-token-0123456789' })
    const from = server.stdout.length
    server.child.kill('SIGHUP')
    await until(() => messages(server, from).some((m) => m.msg.startsWith('SIGHUP: nothing to reload')), 10000, 'SIGHUP logged')
    expect(await post(server.port, 'a-token-0123456789', 1)).toBe(200)
  })
})

describe('named clients and hashed tokens with API_TOKENS_FILE (built server)', () => {
  const sha256 = (token: string) => createHash('sha256').update(token).digest('hex')
  const accessLines = (server: ServerProcess) =>
    server.stdout.map((line) => JSON.parse(line) as { msg: string, status?: number, client?: string }).filter((entry) => entry.msg === 'request')

  it('names the client on the access line, hashed or plain; labels an unnamed token the same after a restart; refuses a reload with a bad line; logs ' +
    'no token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-tokens-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'tokens')
    const secrets = ['billing-secret-0123456789', 'ci-token-0123456789', 'unnamed-token-0123456789']
    writeFileSync(file, `billing:sha256:${sha256('billing-secret-0123456789')}\nci:ci-token-0123456789\nunnamed-token-0123456789\n`)
    const label = `sha256:${sha256('unnamed-token-0123456789').slice(0, 12)}`

    const first = await startServer({ API_TOKENS_FILE: file })
    expect(await post(first.port, 'billing-secret-0123456789', 1)).toBe(200)
    expect(await post(first.port, 'ci-token-0123456789', 2)).toBe(200)
    expect(await post(first.port, 'unnamed-token-0123456789', 3)).toBe(200)
    expect(await post(first.port, 'billing-secret-012345678', 4)).toBe(401)
    await until(() => accessLines(first).length === 4, 5000, 'four access lines')
    expect(accessLines(first).map((entry) => [entry.status, entry.client])).toEqual([[200, 'billing'], [200, 'ci'], [200, label], [401, undefined]])

    // A reload with one bad line adds no token, the line number in the warning, but revokes those it no longer lists.
    const from = first.stdout.length
    writeFileSync(file, `billing:sha256:${sha256('billing-secret-0123456789')}\nci:new-ci-token-0123456789\nci:other-ci-token-0123\n`)
    first.child.kill('SIGHUP')
    await until(() => messages(first, from).some((m) => m.msg.startsWith('tokens not reloaded')), 10000, 'refusal logged')
    expect(messages(first,
      from).find((m) => m.msg.startsWith('tokens not reloaded'))?.reason).toBe('API_TOKENS_FILE line 3: duplicate client name (first on line 2); names ' +
        'are unique')
    expect(await post(first.port, 'billing-secret-0123456789', 5)).toBe(200)
    expect(await post(first.port, 'ci-token-0123456789', 6)).toBe(401)
    expect(await post(first.port, 'new-ci-token-0123456789', 6)).toBe(401)
    first.child.kill('SIGTERM')
    expect(await first.exited).toEqual({ code: 0, signal: null })

    // Another process (a restart) labels the unnamed token the same way.
    writeFileSync(file, 'unnamed-token-0123456789\n')
    const second = await startServer({ API_TOKENS_FILE: file })
    expect(await post(second.port, 'unnamed-token-0123456789', 7)).toBe(200)
    await until(() => accessLines(second).length === 1, 5000, 'one access line')
    expect(accessLines(second)[0]?.client).toBe(label)

    for (const output of [first.stdout.join('\n'), second.stdout.join('\n'), first.stderr(), second.stderr()]) {
      for (const secret of [...secrets, 'new-ci-token', 'other-ci-token']) expect(output).not.toContain(secret)
    }
  }, 40000)

  it('does not start with a bad line: one line on stderr naming the file\'s variable and the line number, never the token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-tokens-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'tokens')
    writeFileSync(file, 'ci:ci-token-0123456789\nbilling:sha256:not-a-digest\n')
    const proc = run(process.execPath, [SERVER], { PORT: '0', API_TOKENS_FILE: file })
    expect((await proc.exited).code).toBe(1)
    expect(proc.stderr()).toBe('plant-store: API_TOKENS_FILE line 2: sha256: must be followed by exactly 64 hex digits, the SHA-256 of the token\n')
  })

  it('does not start with a token shorter than 16 characters: one line naming API_TOKENS\'s entry or the file\'s line', async () => {
    const short = run(process.execPath, [SERVER], { PORT: '0', API_TOKENS: 'ci-token-0123456789,fifteen-chars-1' })
    expect((await short.exited).code).toBe(1)
    expect(short.stderr()).toBe('plant-store: API_TOKENS entry 2: the token is shorter than 16 characters; use a random one, e.g. `openssl rand -hex 32`\n')

    const dir = mkdtempSync(join(tmpdir(), 'plant-store-tokens-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'tokens')
    writeFileSync(file, 'ci:ci-token-0123456789\nbilling:a\n')
    const proc = run(process.execPath, [SERVER], { PORT: '0', API_TOKENS_FILE: file })
    expect((await proc.exited).code).toBe(1)
    expect(proc.stderr()).toBe('plant-store: API_TOKENS_FILE line 2: the token is shorter than 16 characters; use a random one, e.g. `openssl rand -hex 32`\n')
  })
})
