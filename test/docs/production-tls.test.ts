import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../helpers.js'
import { run, startServer } from '../e2e/server-process.js'
import { docBlock } from './blocks.js'

// docs/production.md's TLS recipe: its HAProxy configuration, run as written in front of the built
// service, with a certificate made here for localhost. The changes: this machine's free ports for 443
// and the service's, and the certificate's path. Skips with the reason without haproxy or openssl;
// REQUIRE_HAPROXY=1 (CI) turns the skip into a failure.
const HAPROXY = process.env.HAPROXY ?? 'haproxy'
const TOKEN = 'production-tls-docs-token'
const missing = spawnSync(HAPROXY, ['-v'], { stdio: 'ignore' }).status !== 0
  ? `${HAPROXY} is not installed (apt-get install haproxy, or set HAPROXY)`
  : spawnSync('openssl', ['version'], { stdio: 'ignore' }).status !== 0 ? 'openssl is not installed' : undefined

if (missing !== undefined && process.env.REQUIRE_HAPROXY === '1') {
  it('runs: REQUIRE_HAPROXY=1 turns the skip into a failure', () => { expect.fail(`REQUIRE_HAPROXY=1 but ${missing}`) })
}

interface Reply { status: number, headers: Record<string, string | string[] | undefined>, body: string }

/** POST /plants over https to localhost:`port`, trusting only `ca`. */
const postTls = (port: number, ca: string, body: string, token?: string): Promise<Reply> => new Promise((resolve, reject) => {
  const headers = { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) }
  const req = request({ host: '127.0.0.1', servername: 'localhost', port, ca, method: 'POST', path: '/plants', headers }, (res) => {
    let text = ''
    res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
      .on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }))
  })
  req.on('error', reject).end(body)
})

describe.skipIf(missing !== undefined)(missing !== undefined
  ? `docs/production.md's TLS recipe skipped: ${missing}`
  : 'docs/production.md: TLS in front of the service (HAProxy)', () => {
  let dir = ''
  let ca = ''

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-tls-proxy-'))
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
      '-keyout', 'key.pem', '-out', 'cert.pem', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { cwd: dir, stdio: 'ignore' })
    ca = readFileSync(join(dir, 'cert.pem'), 'utf8')
    writeFileSync(join(dir, 'plants.pem'), ca + readFileSync(join(dir, 'key.pem'), 'utf8'))
  })

  afterAll(() => { if (dir !== '') rmSync(dir, { recursive: true, force: true }) })

  it('serves creates over https as the service does directly, and answers nothing in clear on that port', { timeout: 60000 }, async () => {
    const server = await startServer({ API_TOKENS: TOKEN })
    const port = await freePort()
    const config = docBlock('docs/production.md', 'tls-haproxy')
      .replace('bind :443 ', `bind 127.0.0.1:${port} `)
      .replace('/etc/haproxy/plants.pem', join(dir, 'plants.pem'))
      .replace('10.0.0.1:3000', `127.0.0.1:${server.port}`)
    expect(config).toContain(`127.0.0.1:${server.port} check`)
    writeFileSync(join(dir, 'haproxy.cfg'), config)
    const proxy = run(HAPROXY, ['-f', join(dir, 'haproxy.cfg'), '-db'], {})

    // Until HAProxy listens and its check has found the service up (a 503 from HAProxy before that).
    const deadline = Date.now() + 20000
    let first = await postTls(port, ca, '{"id":1,"name":"Monstera"}', TOKEN).catch(() => undefined)
    while (first === undefined || first.status === 503) {
      if (Date.now() > deadline) throw new Error(`no answer over TLS within 20 s: ${proxy.stderr()}`)
      await new Promise((resolve) => setTimeout(resolve, 200))
      first = await postTls(port, ca, '{"id":1,"name":"Monstera"}', TOKEN).catch(() => undefined)
    }
    expect([first.status, JSON.parse(first.body)]).toEqual([200, { name: 'Monstera' }])
    const conflict = await postTls(port, ca, '{"id":1,"name":"Fern"}', TOKEN)
    expect([conflict.status, JSON.parse(conflict.body)]).toEqual([409, { error: 409, message: 'a plant with id 1 already exists with another name or tag' }])
    const anonymous = await postTls(port, ca, '{"id":2,"name":"Fern"}')
    expect([anonymous.status, anonymous.headers['www-authenticate']]).toEqual([401, 'Bearer realm="plants"'])
    // A client that tries plain HTTP on the TLS port gets no HTTP answer at all.
    await expect(fetch(`http://127.0.0.1:${port}/plants`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: '{}' })).rejects.toThrow()
  })
})
