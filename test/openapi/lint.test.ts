import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it, onTestFinished } from 'vitest'
import { buildTestApp } from '../helpers.js'

const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url))
const REDOCLY = fileURLToPath(import.meta.resolve('@redocly/cli/bin/cli.js'))
const GUARD = root('test/openapi/network-guard.mjs')
/** What the guard writes to stderr for each connection it refuses. */
const REFUSED = 'network-guard: refused'

interface LintReport {
  totals: { errors: number, warnings: number, ignored: number }
  problems: { ruleId: string, severity: string, message: string, location: { pointer: string }[] }[]
}

describe('redocly lint on the served /openapi.json', () => {
  it('reports 0 errors and 0 warnings with the recommended rules (redocly.yaml), without touching the network', async () => {
    const app = await buildTestApp()
    const reply = await app.inject({ method: 'GET', url: '/openapi.json' })
    expect(reply.statusCode).toBe(200)
    const dir = await mkdtemp(join(tmpdir(), 'plant-store-redocly-'))
    onTestFinished(() => rm(dir, { recursive: true, force: true }))
    const file = join(dir, 'openapi.json')
    await writeFile(file, reply.body)

    const { stdout, stderr } = await promisify(execFile)(process.execPath, [REDOCLY, 'lint', file, '--config', root('redocly.yaml'), '--format', 'json'], {
      env: {
        PATH: process.env.PATH,
        // Its own state files go to a throwaway home; no telemetry, no update check.
        HOME: dir,
        REDOCLY_TELEMETRY: 'off',
        REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
        // Every Node process it starts refuses outbound connections and says so on stderr.
        NODE_OPTIONS: `--import=${GUARD}`
      },
      timeout: 60000
    }).catch((error: { stdout?: string, stderr?: string }) => ({ stdout: error.stdout ?? '', stderr: error.stderr ?? '' }))

    expect(stderr).not.toContain(REFUSED)
    const report = JSON.parse(stdout) as LintReport
    const problems = report.problems.map((problem) => `${problem.severity} ${problem.ruleId} at ${problem.location[0]?.pointer}: ${problem.message}`)
    expect(problems).toEqual([])
    expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 })
  })
})
