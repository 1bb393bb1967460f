import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load-config.js'
import { ConfigError } from '../../src/config/config-error.js'
import { TOKEN } from '../helpers.js'

const base = { API_TOKENS: TOKEN }

describe('hardening configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig(base)
    expect(config).toMatchObject({
      HEADERS_TIMEOUT_MS: 10000,
      REQUEST_TIMEOUT_MS: 15000,
      CONNECTION_TIMEOUT_MS: 30000,
      KEEP_ALIVE_TIMEOUT_MS: 72000,
      MAX_HEADER_BYTES: 16384,
      MAX_EVENT_LOOP_DELAY_MS: 200,
      MAX_RSS_BYTES: 0,
      RATE_LIMIT_PER_MINUTE: 0
    })
    expect(config.MAX_HEAP_USED_BYTES).toBeGreaterThan(0)
  })

  it('reads every variable', () => {
    const config = loadConfig({
      ...base,
      HEADERS_TIMEOUT_MS: '2000',
      REQUEST_TIMEOUT_MS: '3000',
      CONNECTION_TIMEOUT_MS: '4000',
      KEEP_ALIVE_TIMEOUT_MS: '5000',
      MAX_HEADER_BYTES: '8192',
      MAX_EVENT_LOOP_DELAY_MS: '0',
      MAX_HEAP_USED_BYTES: '1000000000',
      MAX_RSS_BYTES: '2000000000',
      RATE_LIMIT_PER_MINUTE: '600',
      REDIS_URL: 'redis://127.0.0.1:6379'
    })
    expect(config).toMatchObject({
      HEADERS_TIMEOUT_MS: 2000,
      REQUEST_TIMEOUT_MS: 3000,
      CONNECTION_TIMEOUT_MS: 4000,
      KEEP_ALIVE_TIMEOUT_MS: 5000,
      MAX_HEADER_BYTES: 8192,
      MAX_EVENT_LOOP_DELAY_MS: 0,
      MAX_HEAP_USED_BYTES: 1000000000,
      MAX_RSS_BYTES: 2000000000,
      RATE_LIMIT_PER_MINUTE: 600,
      REDIS_URL: 'redis://127.0.0.1:6379'
    })
  })

  it.each([
    ['HEADERS_TIMEOUT_MS', { HEADERS_TIMEOUT_MS: 'soon' }],
    ['REQUEST_TIMEOUT_MS', { REQUEST_TIMEOUT_MS: '-1' }],
    ['KEEP_ALIVE_TIMEOUT_MS', { KEEP_ALIVE_TIMEOUT_MS: '1.5' }],
    ['MAX_HEADER_BYTES', { MAX_HEADER_BYTES: '100' }],
    ['MAX_EVENT_LOOP_DELAY_MS', { MAX_EVENT_LOOP_DELAY_MS: 'x' }],
    ['MAX_RSS_BYTES', { MAX_RSS_BYTES: '-5' }],
    ['RATE_LIMIT_PER_MINUTE', { RATE_LIMIT_PER_MINUTE: 'lots' }],
    ['REDIS_URL', { RATE_LIMIT_PER_MINUTE: '10', REDIS_URL: 'http://127.0.0.1:6379' }],
    ['HEADERS_TIMEOUT_MS', { HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '10000' }]
  ])('stops with a ConfigError naming %s for a bad value', (name, env) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(ConfigError)
    expect(() => loadConfig({ ...base, ...env })).toThrow(name)
  })
})
