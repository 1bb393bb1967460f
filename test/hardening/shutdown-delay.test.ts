import { request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { TOKEN } from '../helpers.js'
import { startServer } from '../e2e/server-process.js'

const DELAY_MS = 2000

interface Answer {
  status: number
  connection: string | undefined
  body: string
}

/** One request on a new connection (no agent): what a balancer's new connection sees. */
function fresh (port: number, method: string, path: string, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path,
      method,
      agent: false,
      headers: body === undefined ? {} : { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
    }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body: text }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

describe('SHUTDOWN_DELAY_MS (built server)', () => {
  it(`on SIGTERM answers /readyz 503 at once, keeps accepting and serving new connections for ${DELAY_MS} ms, then drains and exits 0`,
    { timeout: 20000 }, async () => {
      const server = await startServer({ API_TOKENS: TOKEN, SHUTDOWN_DELAY_MS: String(DELAY_MS), SHUTDOWN_TIMEOUT_MS: '3000' })
      expect((await fresh(server.port, 'GET', '/readyz')).status).toBe(200)
      let exitedAt = 0
      void server.exited.then(() => { exitedAt = Date.now() })

      const signalledAt = Date.now()
      server.child.kill('SIGTERM')
      await server.waitForLine((line) => line.includes('not ready: serving for SHUTDOWN_DELAY_MS'))
      const readiness = await fresh(server.port, 'GET', '/readyz')
      expect(readiness.status).toBe(503)
      expect(JSON.parse(readiness.body)).toMatchObject({ error: 503 })
      expect((await fresh(server.port, 'GET', '/livez')).status).toBe(200)

      // New connections all through the delay, one every 50 ms until one is refused: each one sent before the delay
      // ends is accepted and its create served (and told to reconnect elsewhere with Connection: close).
      const attempts: Array<{ sentAt: number, answer: Answer | undefined }> = []
      for (let id = 1; attempts.at(-1)?.answer !== undefined || id === 1; id++) {
        const sentAt = Date.now()
        const answer = await fresh(server.port, 'POST', '/plants', JSON.stringify({ id, name: 'late' })).catch(() => undefined)
        attempts.push({ sentAt, answer })
        await sleep(50)
      }
      const inDelay = attempts.filter(({ sentAt }) => sentAt < signalledAt + DELAY_MS)
      expect(inDelay.map(({ answer }) => [answer?.status, answer?.connection])).toEqual(inDelay.map(() => [200, 'close']))
      // The attempts reach the delay's last quarter: what is checked is its end, not only its start.
      expect(inDelay.at(-1)?.sentAt).toBeGreaterThanOrEqual(signalledAt + DELAY_MS * 0.75)

      // After the delay the listener closes (new connections refused) and the process exits 0.
      expect(await server.exited).toEqual({ code: 0, signal: null })
      expect(exitedAt - signalledAt).toBeGreaterThanOrEqual(DELAY_MS)
      await expect(fresh(server.port, 'GET', '/livez')).rejects.toThrow(/ECONNREFUSED/)
      const lines = server.stdout.map((line) => JSON.parse(line) as { msg?: string })
      expect(lines.map((line) => line.msg).filter((msg) => msg?.includes('closing'))).toEqual(['not ready: serving for SHUTDOWN_DELAY_MS, then closing',
        'closing'])
    })

  it('on SIGINT (Ctrl-C in a terminal) skips the delay: exits 0 at once even with SHUTDOWN_DELAY_MS of a minute', { timeout: 20000 }, async () => {
    const server = await startServer({ API_TOKENS: TOKEN, SHUTDOWN_DELAY_MS: '60000' })
    expect((await fresh(server.port, 'GET', '/readyz')).status).toBe(200)
    server.child.kill('SIGINT')
    expect(await server.exited).toEqual({ code: 0, signal: null })
    expect(server.stdout.join('\n')).not.toContain('not ready: serving for SHUTDOWN_DELAY_MS')
  })

  it('without SHUTDOWN_DELAY_MS (the default, 0) closes the listener at once on SIGTERM', { timeout: 20000 }, async () => {
    const server = await startServer({ API_TOKENS: TOKEN })
    server.child.kill('SIGTERM')
    await server.waitForLine((line) => line.includes('"closing"'))
    expect(server.stdout.join('\n')).not.toContain('not ready: serving')
    expect(await server.exited).toEqual({ code: 0, signal: null })
  })
})
