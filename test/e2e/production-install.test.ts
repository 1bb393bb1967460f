import { execFileSync } from 'node:child_process'
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { run, startServer } from './server-process.js'

/**
 * What the Docker image relies on, proven without a Docker engine: a production-only install of the
 * built output starts as a non-root user with the image's environment, answers /readyz and
 * POST /plants, and the image's own HEALTHCHECK command passes. Slow (a clean `npm ci` that
 * compiles better-sqlite3), so it runs when SMOKE_PRODUCTION=1, as .ci/run sets.
 */
const root = fileURLToPath(new URL('../../', import.meta.url))
const enabled = process.env.SMOKE_PRODUCTION === '1'
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8')
/** The JSON array of an exec-form instruction of the runtime stage. */
const execForm = (instruction: string): string[] => {
  const match = new RegExp(`^${instruction}(?: [^\\[]*)? (\\[.*\\])$`, 'm').exec(dockerfile.replace(/\\\n\s*/g, ''))
  if (match?.[1] === undefined) throw new Error(`no exec-form ${instruction} in the Dockerfile`)
  return JSON.parse(match[1]) as string[]
}
const UNPRIVILEGED = { uid: 65534, gid: 65534 } // nobody:nogroup, standing in for the image's "node" user

describe.skipIf(!enabled)(enabled
  ? 'production install (what the Docker image relies on)'
  : 'production install skipped: set SMOKE_PRODUCTION=1 to run a clean production install (CI does)', () => {
  it('starts from `npm ci --omit=dev` as a non-root user and answers /readyz, POST /plants and the HEALTHCHECK', { timeout: 300000 }, async () => {
    const app = mkdtempSync(join(tmpdir(), 'plants-prod-'))
    try {
      for (const file of ['package.json', 'package-lock.json', 'dist']) cpSync(join(root, file), join(app, file), { recursive: true })
      execFileSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], { cwd: app, stdio: 'ignore' })
      expect(existsSync(join(app, 'node_modules', 'vitest'))).toBe(false)
      expect(existsSync(join(app, 'node_modules', 'typescript'))).toBe(false)
      chmodSync(app, 0o755)

      const [command, ...args] = execForm('CMD')
      expect([command, ...args]).toEqual(['node', 'dist/server.js'])
      // The image sets METRICS_PORT=9464 and exposes it; a free port here, so that parallel runs never collide.
      expect(dockerfile).toMatch(/^\s+METRICS_PORT=9464$/m)
      expect(dockerfile).toMatch(/^EXPOSE 9464$/m)
      const server = await startServer({ HOST: '0.0.0.0', API_TOKENS: 'smoke', NODE_ENV: 'production', METRICS_PORT: '0' }, { args, cwd: app, ...UNPRIVILEGED })
      const port = String(server.port)
      expect(readFileSync(`/proc/${server.child.pid}/status`, 'utf8')).toMatch(/^Uid:\s+65534\s/m)

      const base = `http://127.0.0.1:${port}`
      expect((await fetch(`${base}/readyz`)).status).toBe(200)
      const created = await fetch(`${base}/plants`, {
        method: 'POST',
        headers: { authorization: 'Bearer smoke', 'content-type': 'application/json' },
        body: '{"id":1,"name":"fern"}'
      })
      expect(created.status).toBe(200)
      // prom-client is a production dependency: the metrics listener answers.
      const metricsUrl = (JSON.parse(await server.waitForLine((line) => line.includes('Metrics listening at'))) as { url: string }).url
      expect(await (await fetch(metricsUrl)).text()).toContain('plant_store_inserts_total{outcome="created"} 1')

      const [probe, ...probeArgs] = execForm('HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD')
      expect(probe).toBe('node')
      const healthcheck = run(process.execPath, probeArgs, { PORT: port }, UNPRIVILEGED)
      expect((await healthcheck.exited).code).toBe(0)

      server.child.kill('SIGTERM')
      expect(await server.exited).toEqual({ code: 0, signal: null })
    } finally {
      rmSync(app, { recursive: true, force: true })
    }
  })
})

