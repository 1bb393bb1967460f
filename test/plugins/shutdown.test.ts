import { describe, expect, it } from 'vitest'
import { buildTestApp } from '../helpers.js'

const messages = (lines: string[]) => lines.map((line) => JSON.parse(line) as { msg?: string, level: number })
  .filter((line) => line.msg?.includes('closing') === true)

describe('the shutdown plugin', () => {
  it('is not closing until shutdown begins: no Connection: close before', async () => {
    const app = await buildTestApp()
    expect(app.closing).toBe(false)
    expect((await app.inject({ method: 'GET', url: '/livez' })).headers.connection).toBe('keep-alive')
  })

  it('closes at once after an unexpected error, logged at error level, whatever SHUTDOWN_DELAY_MS says', async () => {
    const logLines: string[] = []
    const app = await buildTestApp({ logLines, config: { SHUTDOWN_DELAY_MS: 60000 } })
    let closed = false
    app.addHook('onClose', async () => { closed = true })
    await app.shutDown(undefined, new Error('boom'))
    expect(closed).toBe(true)
    expect(messages(logLines).map((line) => [line.msg, line.level])).toEqual([['closing after an unexpected error', 50]])
  })

  it('closes an app that never listened (inject only) without waiting for the 500 ms grace', async () => {
    const app = await buildTestApp()
    const started = performance.now()
    await app.close()
    expect(performance.now() - started).toBeLessThan(450)
  })

  it('skips SHUTDOWN_DELAY_MS for a signal other than SIGTERM', async () => {
    const logLines: string[] = []
    const app = await buildTestApp({ logLines, config: { SHUTDOWN_DELAY_MS: 60000 } })
    await app.shutDown('SIGINT')
    expect(app.closing).toBe(true)
    expect(messages(logLines).map((line) => line.msg)).toEqual(['closing'])
  })
})
