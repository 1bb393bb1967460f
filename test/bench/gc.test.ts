import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'

interface Pauses { scavenges: number, fullGCs: number, pauseMs: number, maxPauseMs: number }
// bench/util.js is plain JavaScript, without types.
const { gcPauses: pauses } = await import(new URL('../../bench/util.js', import.meta.url).href) as
  { gcPauses: (text: string, fromMs?: number, toMs?: number) => Pauses }

/** What node --trace-gc prints for a program that fills its young generation and then asks for two full collections. */
function traceGc (): string {
  const program = 'let a = []; for (let i = 0; i < 300000; i++) { a.push({ i }); if (a.length > 1000) a = [] } gc(); gc()'
  const result = spawnSync(process.execPath, ['--trace-gc', '--expose-gc', '--max-semi-space-size=1', '-e', program], { encoding: 'utf8' })
  expect(result.status, result.stderr).toBe(0)
  return result.stdout
}

describe('gcPauses: the GC pauses of a server in the bench\'s measured window, from node --trace-gc', () => {
  it('counts young and full collections apart and sums their pauses, the longest not above the sum', () => {
    const text = traceGc()
    const all = pauses(text)
    expect(all.scavenges).toBeGreaterThan(0)
    // The two gc() calls, and any that V8 started itself.
    expect(all.fullGCs).toBeGreaterThanOrEqual(2)
    expect(all.pauseMs).toBeGreaterThan(0)
    expect(all.maxPauseMs).toBeGreaterThan(0)
    expect(all.maxPauseMs).toBeLessThanOrEqual(all.pauseMs)
    // Lines that are not V8's (a server's JSON log) count for nothing.
    expect(pauses(`{"level":30,"msg":"request"}\n${text}`)).toEqual(all)
  })

  it('counts only the collections that began inside the window, by the milliseconds V8 prints', () => {
    const text = traceGc()
    const times = [...text.matchAll(/^\[\d+:0x[0-9a-f]+\]\s+([\d.]+) ms: /gm)].map((m) => Number(m[1]))
    const last = Math.max(...times)
    expect(pauses(text, last + 1).scavenges + pauses(text, last + 1).fullGCs).toBe(0)
    const lastOnly = pauses(text, last, last)
    expect(lastOnly.scavenges + lastOnly.fullGCs).toBe(times.filter((t) => t === last).length)
  })
})
