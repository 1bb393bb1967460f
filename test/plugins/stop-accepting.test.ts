import { Agent, createServer, request, type Server } from 'node:http'
import { describe, expect, it, onTestFinished } from 'vitest'
import { stopAccepting } from '../../src/plugins/shutdown.js'
import { listening } from '../helpers.js'

/** A keep-alive server answering 'ok', listening on a free port. */
async function keepAliveServer (): Promise<{ server: Server, port: number }> {
  const server = createServer({ keepAliveTimeout: 60000 }, (_request, response) => { response.end('ok') })
  onTestFinished(() => { server.closeAllConnections() })
  return { server, port: await listening(server) }
}

/** One GET through `agent`: its body, or the error code. */
function get (port: number, agent: Agent | false): Promise<string> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, agent }, (response) => {
      let body = ''
      response.setEncoding('utf8').on('data', (chunk: string) => { body += chunk }).on('end', () => resolve(body))
    })
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
    req.end()
  })
}

describe('stopAccepting, the one reach past http.Server\'s close (src/plugins/shutdown.ts)', () => {
  it('refuses new connections, keeps an idle keep-alive connection serving, and resolves once it ends', async () => {
    const { server, port } = await keepAliveServer()
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    expect(await get(port, agent)).toBe('ok')
    let stopped = false
    const stopping = stopAccepting(server).then(() => { stopped = true })
    expect(await get(port, false)).toBe('ECONNREFUSED')
    expect(await get(port, agent)).toBe('ok')
    expect(stopped).toBe(false)
    agent.destroy()
    await stopping
    expect(stopped).toBe(true)
  })

  it('is needed: http.Server\'s own close() destroys an idle keep-alive connection at once', async () => {
    const { server, port } = await keepAliveServer()
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    onTestFinished(() => agent.destroy())
    expect(await get(port, agent)).toBe('ok')
    const connections = await new Promise<number>((resolve) => { server.getConnections((_error, count) => resolve(count)) })
    expect(connections).toBe(1)
    await new Promise<void>((resolve) => server.close(() => resolve()))
    const after = await new Promise<number>((resolve) => { server.getConnections((_error, count) => resolve(count)) })
    expect(after).toBe(0)
  })
})
