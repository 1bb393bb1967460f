import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { freePort, postOverHttp } from '../helpers.js'
import { run, startServer } from '../e2e/server-process.js'
import { docBlock } from './blocks.js'

// The README's first recipes as a newcomer runs them: `npm start` with the documented variables, then
// each curl line of "Try it", whose comment gives the status it gets. The one change: a free port for
// 3000, which another process on this machine may hold. The built server must be current (npm run
// build first), or `npm start` builds it.
const root = fileURLToPath(new URL('../../', import.meta.url))

/** Runs a bash script to its end; resolves with what it printed. */
const bash = (script: string, cwd = root): Promise<string> => new Promise((resolve, reject) => {
  execFile('bash', ['-c', script], { cwd, timeout: 30000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
    if (error === null) resolve(stdout)
    else reject(new Error(`${script} failed: ${error.message}\n${stderr}`))
  })
})

const quickStart = docBlock('README.md', 'quick-start')
const tryIt = docBlock('README.md', 'try-it')

describe('README.md: run it and try it', () => {
  it('starts with the quick start\'s `npm start` line, and answers each "Try it" line with the status its comment gives', { timeout: 120000 }, async () => {
    const start = quickStart.split('\n').find((line) => / npm start\b/.test(line))?.replace(/\s+#.*$/, '')
    expect(start).toMatch(/^API_TOKENS=\S{16,} npm start$/)
    const port = await freePort()
    // No shedding on event-loop delay, as for every built server the tests start: on a loaded machine a
    // 503 there is the machine's, not the recipe's.
    const server = run('bash', ['-c', start ?? ''], { HOME: process.env.HOME, PORT: String(port), MAX_EVENT_LOOP_DELAY_MS: '0' }, { cwd: root })
    await server.waitForLine((line) => line.includes(`Server listening at http://127.0.0.1:${port}`), 60000)

    const [variables = '', ...lines] = tryIt.replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`).trim().split('\n')
    expect(lines.length).toBeGreaterThanOrEqual(10)
    const seen: string[] = []
    for (const line of lines) {
      const expected = /#\s*(\d{3})\b/.exec(line)?.[1]
      expect(expected, line).toMatch(/^\d{3}$/)
      // The last status line: curl may print a 100 Continue before the answer.
      const statuses = [...(await bash(`${variables}\n${line}`)).matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((match) => match[1])
      seen.push(`${statuses.at(-1) ?? 'none'} ${line}`)
    }
    expect(seen).toEqual(lines.map((line) => `${/#\s*(\d{3})\b/.exec(line)?.[1] ?? ''} ${line}`))
    server.child.kill('SIGTERM')
    expect((await server.exited).code).toBe(0)
  })
})

describe('docs/operating.md: a hashed token', () => {
  it('writes a tokens file whose entry holds no usable secret, and the token it printed is accepted', { timeout: 60000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-hashed-token-'))
    try {
      const token = (await bash(`${docBlock('docs/operating.md', 'hashed-token')}\nprintf %s "$TOKEN"`, dir))
      const file = readFileSync(join(dir, 'tokens'), 'utf8')
      expect(file).toMatch(/^billing:sha256:[0-9a-f]{64}\n$/)
      expect(file).not.toContain(token)
      const server = await startServer({ API_TOKENS_FILE: join(dir, 'tokens') })
      const post = (bearer: string): Promise<Response> => postOverHttp(server.url, bearer, '{"id":1,"name":"Monstera"}')
      expect((await post(token)).status).toBe(200)
      expect((await post(`${token}x`)).status).toBe(401)
      await server.waitForLine((line) => line.includes('"client":"billing"'))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
