import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, onTestFinished } from 'vitest'

const SCALE = fileURLToPath(new URL('../../bench/scale.js', import.meta.url))
const RESULTS = fileURLToPath(new URL('../../bench/results/', import.meta.url))
const wrk = spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined

interface Step { plants: number, rps: number, p99: number, max: number, rssBytesPerPlant: number | null }
interface Fill { store: string, ids: string, complete: boolean, steps: Step[], checks: { measure: string, pass: boolean }[] }

if (!wrk && process.env.REQUIRE_WRK === '1') {
  describe('bench/scale.js', () => {
    it('runs: REQUIRE_WRK=1 turns a skip into a failure', () => { expect.fail('wrk is not installed (apt-get install wrk)') })
  })
}

/**
 * Runs bench/scale.js in a process group of its own, so that the server and wrk it starts end with
 * it when the test ends early (a failure or a timeout): it does not stop them on a signal itself.
 */
function runScale (args: string[]): Promise<{ status: number | null, output: string }> {
  const child = spawn(process.execPath, [SCALE, ...args], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  const pid = child.pid
  onTestFinished(() => {
    // No pid: the spawn failed (the error rejects below), and there is no group to end.
    if (pid === undefined) return
    try {
      process.kill(-pid, 'SIGKILL')
    } catch {
      // ESRCH: the group has ended already.
    }
    // Its working folder (the server's log), which it removes only when it ends by itself.
    rmSync(join(RESULTS, `scale-tmp-${pid}`), { recursive: true, force: true })
  })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (status) => resolve({ status, output }))
  })
}

/** A tiny `npm run bench:scale` (a few seconds when idle): the fill, its steps and its checks reach the result file, and the chart draws it. */
describe.skipIf(!wrk)(wrk ? 'bench/scale.js' : 'bench/scale.js (skipped: wrk is not installed)', () => {
  it('fills the memory store with random ids and reports each step, the flatness checks and the chart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'scale-test-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const out = join(dir, 'scale.json')
    const result = await runScale(['--stores', 'memory', '--ids', 'random', '--plants', '10000', '--step', '5000', '--window', '1', '--out', out])
    expect(result.status, result.output).toBe(0)
    const { fills } = JSON.parse(readFileSync(out, 'utf8')) as { fills: Fill[] }
    expect(fills.map((f) => [f.store, f.ids, f.complete])).toEqual([['memory', 'random', true]])
    const [fill] = fills as [Fill]
    expect(fill.steps.length).toBeGreaterThan(0)
    expect(fill.steps.at(-1)?.plants).toBeGreaterThanOrEqual(10000)
    for (const s of fill.steps) {
      expect(s.rps, `step at ${s.plants}`).toBeGreaterThan(0)
      expect(s.p99, `step at ${s.plants}`).toBeGreaterThan(0)
      expect(s.max, `step at ${s.plants}`).toBeGreaterThanOrEqual(s.p99)
    }
    expect(fill.checks.map((c) => c.measure)).toEqual(['lowest step throughput vs the first step', 'highest step p99 vs the first step',
      'longest single request (ms)'])
    expect(readFileSync(out.replace(/\.json$/, '.md'), 'utf8')).toContain('## memory, random ids, to 10,000 plants')
    expect(readFileSync(out.replace(/\.json$/, '.svg'), 'utf8')).toMatch(/^<svg [^>]*>.*memory, random ids/s)
  }, 90000)
})
