import { Agent, request } from 'node:http'
import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import { E2E_TOKEN, run, SERVER, startServer } from './server-process.js'

describe('the built server as a process', () => {
  it('answers POST /plants over real HTTP and logs one JSON line for it', async () => {
    const server = await startServer({})
    const res = await fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${E2E_TOKEN}`, 'content-type': 'application/json' },
      body: '{"id":9223372036854775807,"name":"fern"}'
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ name: 'fern' })
    await expect.poll(() => server.stdout.some((line) => line.includes('"route":"/plants"'))).toBe(true)
    expect(server.stdout.join('\n')).not.toContain(E2E_TOKEN)
  })

  it('exits 1 with one clear line naming the variable when the configuration is bad', async () => {
    const proc = run(process.execPath, [SERVER], { API_TOKENS: E2E_TOKEN, PORT: 'eighty' })
    const { code } = await proc.exited
    expect(code).toBe(1)
    expect(proc.stderr()).toBe('plant-store: PORT: Expected number\n')
  })

  it('exits 1 when no token is configured: the service never runs open', async () => {
    const proc = run(process.execPath, [SERVER], {})
    expect((await proc.exited).code).toBe(1)
    expect(proc.stderr()).toBe('plant-store: API_TOKENS: at least one bearer token is required (API_TOKENS or API_TOKENS_FILE); the service never runs open\n')
  })

  it('on SIGTERM finishes the request in flight with Connection: close, and exits 0', async () => {
    const server = await startServer({})
    // A POST whose body has not fully arrived when the signal comes.
    const body = '{"id":1,"name":"fern"}'
    const socket = connect(server.port, '127.0.0.1')
    await new Promise((resolve) => socket.once('connect', resolve))
    socket.write(`POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${E2E_TOKEN}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`)
    let reply = ''
    socket.setEncoding('utf8').on('data', (chunk: string) => { reply += chunk })
    await new Promise((resolve) => setTimeout(resolve, 100))

    server.child.kill('SIGTERM')
    await expect.poll(() => server.stdout.some((line) => line.includes('"msg":"closing"'))).toBe(true)

    socket.write(body.slice(5))
    await new Promise((resolve) => socket.once('end', resolve))
    expect(reply).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
    expect(reply.toLowerCase()).toContain('\r\nconnection: close\r\n')
    expect(reply).toMatch(/\r\n\r\n\{"name":"fern"\}$/)
    expect(await server.exited).toEqual({ code: 0, signal: null })
  })

  it('exits 0 promptly on SIGINT even with an idle keep-alive connection open', async () => {
    const server = await startServer({})
    const agent = new Agent({ keepAlive: true })
    await new Promise((resolve) => request(`${server.url}/livez`, { agent }, (res) => res.resume().on('end', resolve)).end())
    const started = Date.now()
    server.child.kill('SIGINT')
    expect(await server.exited).toEqual({ code: 0, signal: null })
    expect(Date.now() - started).toBeLessThan(5000)
    agent.destroy()
  })
})
