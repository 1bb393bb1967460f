import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { run } from '../e2e/server-process.js'
import { freePort } from '../plants/postgres-test-schemas.js'

const LADDER = fileURLToPath(new URL('../../bench/feature-ladder.js', import.meta.url))
const TOKEN = 'ladder-token-0123456789'

/**
 * `npm run bench -- --targets ladder-1,…` and `npm run bench:instructions` start these steps from
 * dist/: a step that no longer starts (a module it imports changed) shows up here, not as a
 * skipped bench target.
 */
describe('bench/feature-ladder.js: every step starts and stores a plant', () => {
  it.each([1, 2, 3, 4, 5, 6, 7])('step %i answers POST /plants with 200', async (step) => {
    const port = await freePort()
    const proc = run(process.execPath, [LADDER], { STEP: String(step), PORT: String(port), API_TOKENS: TOKEN })
    let exited = false
    void proc.exited.then(() => { exited = true })
    const deadline = Date.now() + 15000
    let status = 0
    while (!exited && Date.now() < deadline) {
      const res = await fetch(`http://127.0.0.1:${port}/plants`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ id: step, name: 'ladder plant' })
      }).catch(() => undefined)
      if (res !== undefined) {
        status = res.status
        break
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(exited ? `exited: ${proc.stderr().trim().split('\n').slice(-3).join(' | ')}` : status).toBe(200)
  })
})
