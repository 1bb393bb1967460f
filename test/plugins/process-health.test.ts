import { Writable } from 'node:stream'
import Fastify from 'fastify'
import pino from 'pino'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { buildApp } from '../../src/app.js'
import { createTokenSet } from '../../src/plugins/auth.js'
import { processHealth } from '../../src/plugins/process-health.js'
import { createMemoryPlantRepository } from '../../src/plants/memory-plant-repository.js'

/** A pino logger at `level` whose lines land in `lines`, parsed. */
function capture (level: string) {
  const lines: Array<Record<string, unknown>> = []
  const logger = pino({ level }, new Writable({
    write (chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    }
  }))
  return { logger, health: () => lines.filter((line) => line.msg === 'process health') }
}

// Only the interval is faked: Fastify's own timers and the event-loop histogram run as they do.
afterEach(() => { vi.useRealTimers() })

describe('process health (the debug line scripts/soak.mjs reads)', () => {
  it('logs the event-loop delay (p50, p99, max in ms), RSS and heap used at debug level every 5 s, and stops at close', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    const { logger, health } = capture('debug')
    const app = Fastify({ loggerInstance: logger })
    await app.register(processHealth)
    await app.ready()
    vi.advanceTimersByTime(4999)
    expect(health()).toEqual([])
    vi.advanceTimersByTime(1)
    expect(health()).toHaveLength(1)
    const [line] = health() as [{ level: number, loopDelayMs: { p50: number, p99: number, max: number }, rssBytes: number, heapUsedBytes: number }]
    expect(line.level).toBe(20)
    const { p50, p99, max } = line.loopDelayMs
    expect(p50 >= 0 && p99 >= p50 && max >= p99).toBe(true)
    expect(line.rssBytes).toBeGreaterThan(line.heapUsedBytes)
    expect(line.heapUsedBytes).toBeGreaterThan(0)
    vi.advanceTimersByTime(5000)
    expect(health()).toHaveLength(2)
    await app.close()
    vi.advanceTimersByTime(10000)
    expect(health()).toHaveLength(2)
  })

  it('is registered by the app at debug and trace only', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    // One app at a time: the faked interval's clock is shared.
    const lines: number[] = []
    for (const level of ['info', 'debug', 'trace']) {
      const { logger, health } = capture(level)
      const app = await buildApp({
        config: { bodyLimit: 16384 },
        tokens: createTokenSet(['t']),
        repository: createMemoryPlantRepository({ maxPlants: 10 }),
        logger
      })
      await app.ready()
      vi.advanceTimersByTime(5000)
      await app.close()
      lines.push(health().length)
    }
    expect(lines).toEqual([0, 1, 1])
  })
})
