import { existsSync, readFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { E2E_TOKEN, run, SERVER, startServer } from './server-process.js'
import { postOverHttp } from '../helpers.js'

const MiB = 2 ** 20

/** The peak resident memory of a process so far (Linux: VmHWM in /proc/<pid>/status), in bytes. */
function peakRss (pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (match === null) throw new Error(`no VmHWM in /proc/${pid}/status`)
  return Number(match[1]) * 1024
}

const hasProc = existsSync('/proc/self/status')
if (!hasProc) console.warn('skipping the gzip bomb memory test: it reads the server\'s peak RSS from /proc (Linux only)')

describe('a gzip bomb against the built server', () => {
  it.skipIf(!hasProc)('answers 413 and the server\'s peak memory does not grow by the decoded size (100 MiB of zeros in 100 kB)', async () => {
    const server = await startServer({ BODY_LIMIT: '131072' })
    const pid = server.child.pid as number
    const post = (body: Buffer) => postOverHttp(server.url, E2E_TOKEN, body, { 'content-encoding': 'gzip' })
    // Warm up the gzip path, so that what is measured is the bomb alone.
    expect((await post(gzipSync('{"id":1,"name":"fern"}'))).status).toBe(200)
    const bomb = gzipSync(Buffer.alloc(100 * MiB), { level: 9 })
    expect(bomb.length).toBeLessThan(131072)
    const before = peakRss(pid)

    const res = await post(bomb)
    expect(res.status).toBe(413)
    expect(await res.json()).toEqual({ error: 413, message: 'Request body is too large' })
    // Decoding it whole would hold at least its 100 MiB at once; cut off at BODY_LIMIT it holds about 128 kB.
    expect(peakRss(pid) - before).toBeLessThan(16 * MiB)
    expect((await post(gzipSync('{"id":2,"name":"moss"}'))).status).toBe(200)
  })
})

describe('CORS in the built server', () => {
  it('with CORS_ORIGINS set, answers a real preflight and then the POST for the listed origin', async () => {
    const origin = 'http://localhost:5173'
    const server = await startServer({ CORS_ORIGINS: `${origin}, https://app.example.com` })
    const pre = await fetch(`${server.url}/plants`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' }
    })
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-origin')).toBe(origin)
    expect(pre.headers.get('access-control-allow-headers')).toBe('authorization, content-type')
    expect(pre.headers.get('access-control-max-age')).toBe('600')
    const res = await fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: { origin, authorization: `Bearer ${E2E_TOKEN}`, 'content-type': 'application/json' },
      body: '{"id":1,"name":"fern"}'
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('access-control-allow-origin')).toBe(origin)
  })

  it('exits 1 with one line naming CORS_ORIGINS when an origin has a path', async () => {
    const proc = run(process.execPath, [SERVER], { API_TOKENS: E2E_TOKEN, CORS_ORIGINS: 'https://app.example.com/' })
    expect((await proc.exited).code).toBe(1)
    expect(proc.stderr()).toBe('plant-store: CORS_ORIGINS: origin 1 (https://app.example.com/) is not http(s)://host[:port] as a browser sends it ' +
      '(lower-case host, no path, no default port), nor * alone for any origin\n')
  })
})
