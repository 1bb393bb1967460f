import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const SCALE = fileURLToPath(new URL('../../bench/scale.js', import.meta.url))
const wrk = spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined

interface Step { plants: number, rps: number, p99: number, max: number, rssBytesPerPlant: number | null }
interface Fill { store: string, ids: string, complete: boolean, steps: Step[], checks: { measure: string, pass: boolean }[] }

/** A tiny `npm run bench:scale` (a few seconds): the fill, its steps and its checks reach the result file, and the chart draws it. */
describe.skipIf(!wrk)(wrk ? 'bench/scale.js' : 'bench/scale.js (skipped: wrk is not installed)', () => {
  it('fills the memory store with random ids and reports each step, the flatness checks and the chart', () => {
    const dir = mkdtempSync(join(tmpdir(), 'scale-test-'))
    try {
      const out = join(dir, 'scale.json')
      const result = spawnSync(process.execPath, [SCALE, '--stores', 'memory', '--ids', 'random', '--plants', '20000', '--step', '10000', '--window', '1', '--out', out],
        { encoding: 'utf8', timeout: 25000 })
      expect(result.status, result.stderr + result.stdout).toBe(0)
      const { fills } = JSON.parse(readFileSync(out, 'utf8')) as { fills: Fill[] }
      expect(fills.map((f) => [f.store, f.ids, f.complete])).toEqual([['memory', 'random', true]])
      const [fill] = fills as [Fill]
      expect(fill.steps.length).toBeGreaterThan(0)
      expect(fill.steps.at(-1)?.plants).toBeGreaterThanOrEqual(20000)
      for (const s of fill.steps) expect(s.rps > 0 && s.p99 > 0 && s.max >= s.p99).toBe(true)
      expect(fill.checks.map((c) => c.measure)).toEqual(['lowest step throughput vs the first step', 'highest step p99 vs the first step', 'longest single request (ms)'])
      expect(readFileSync(out.replace(/\.json$/, '.md'), 'utf8')).toContain('## memory, random ids, to 20,000 plants')
      expect(readFileSync(out.replace(/\.json$/, '.svg'), 'utf8')).toMatch(/^<svg [^>]*>.*memory, random ids/s)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 30000)
})
