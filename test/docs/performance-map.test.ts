import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { docBlock } from './blocks.js'

// docs/performance.md's command for the memory store's pauses, run as given: it fills a Map to 4,194,305 entries
// (about 650 MB) and prints each insert over 100 ms. Each doubling past a million copies the whole table, far
// over 100 ms on any machine this runs on, so those lines are certain; other lines (a GC) may come and go.
const run = promisify(execFile)

describe('docs/performance.md: a Map stalls as it doubles', () => {
  it('prints the inserts over 100 ms, among them the doublings at 2,097,153 and 4,194,305 entries', async () => {
    const { stdout } = await run('bash', ['-c', docBlock('docs/performance.md', 'map-stalls')], { timeout: 240000 })
    expect(stdout).toMatch(/^(\d+ \d+ ms\n)+$/)
    const sizes = stdout.trim().split('\n').map((line) => Number(line.split(' ')[0]))
    expect(sizes).toContain(2 ** 21 + 1)
    expect(sizes).toContain(2 ** 22 + 1)
  }, 250000)
})
