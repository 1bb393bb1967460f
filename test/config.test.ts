import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { defaultMaxHeapUsedBytes, loadConfig } from '../src/config.js'

describe('loadConfig', () => {
  it('uses the documented defaults', () => {
    expect(loadConfig({ API_TOKENS: 'a' })).toEqual({
      port: 3000, host: '127.0.0.1', logLevel: 'info', tokens: ['a'], databaseUrl: 'memory:',
      databasePoolMax: 10, databaseStatementTimeoutMs: 5000,
      bodyLimit: 16384, maxPlants: 1000000, shutdownTimeoutMs: 8000,
      http: { headersTimeoutMs: 10000, requestTimeoutMs: 15000, connectionTimeoutMs: 30000, keepAliveTimeoutMs: 72000, maxHeaderBytes: 16384 },
      overload: { maxEventLoopDelayMs: 200, maxHeapUsedBytes: defaultMaxHeapUsedBytes(), maxRssBytes: 0, sampleIntervalMs: 1000 }
    })
  })

  it('reads comma-separated tokens, trimming blanks and duplicates', () => {
    expect(loadConfig({ API_TOKENS: ' a, b,,a ' }).tokens).toEqual(['a', 'b'])
  })

  it('reads one token per line from API_TOKENS_FILE', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'plants-')), 'tokens')
    writeFileSync(file, 'one\r\ntwo\n\n')
    expect(loadConfig({ API_TOKENS_FILE: file })).toMatchObject({ tokens: ['one', 'two'], tokensFile: file })
  })

  it('reads the PostgreSQL pool size and statement timeout', () => {
    expect(loadConfig({ API_TOKENS: 'a', DATABASE_POOL_MAX: '40', DATABASE_STATEMENT_TIMEOUT_MS: '1500' }))
      .toMatchObject({ databasePoolMax: 40, databaseStatementTimeoutMs: 1500 })
  })

  const refusals: [string, NodeJS.ProcessEnv, RegExp][] = [
    ['no token at all', {}, /^API_TOKENS: set API_TOKENS/],
    ['only blank tokens', { API_TOKENS: ' , ' }, /^API_TOKENS: at least one bearer token/],
    ['a token with a space', { API_TOKENS: 'a b' }, /^API_TOKENS: token 1 has characters/],
    ['both token sources', { API_TOKENS: 'a', API_TOKENS_FILE: '/x' }, /^API_TOKENS and API_TOKENS_FILE are both set/],
    ['a missing tokens file', { API_TOKENS_FILE: '/nonexistent/tokens' }, /^API_TOKENS_FILE: cannot read \/nonexistent\/tokens: ENOENT/],
    ['a PORT that is not a number', { API_TOKENS: 'a', PORT: 'abc' }, /^PORT must be integer/],
    ['a PORT of Infinity', { API_TOKENS: 'a', PORT: 'Infinity' }, /^PORT must be integer/],
    ['a PORT out of range', { API_TOKENS: 'a', PORT: '70000' }, /^PORT must be <= 65535/],
    ['an unknown LOG_LEVEL', { API_TOKENS: 'a', LOG_LEVEL: 'loud' }, /^LOG_LEVEL/],
    ['a BODY_LIMIT below 64', { API_TOKENS: 'a', BODY_LIMIT: '10' }, /^BODY_LIMIT must be >= 64/],
    ['a MAX_PLANTS of 0', { API_TOKENS: 'a', MAX_PLANTS: '0' }, /^MAX_PLANTS must be >= 1/],
    ['a DATABASE_POOL_MAX of 0', { API_TOKENS: 'a', DATABASE_POOL_MAX: '0' }, /^DATABASE_POOL_MAX must be >= 1/],
    ['a DATABASE_POOL_MAX that is not a number', { API_TOKENS: 'a', DATABASE_POOL_MAX: 'ten' }, /^DATABASE_POOL_MAX must be integer/],
    ['a DATABASE_STATEMENT_TIMEOUT_MS below 100', { API_TOKENS: 'a', DATABASE_STATEMENT_TIMEOUT_MS: '0' }, /^DATABASE_STATEMENT_TIMEOUT_MS must be >= 100/],
    ['a DATABASE_STATEMENT_TIMEOUT_MS above 10 minutes', { API_TOKENS: 'a', DATABASE_STATEMENT_TIMEOUT_MS: '600001' }, /^DATABASE_STATEMENT_TIMEOUT_MS must be <= 600000/]
  ]
  for (const [what, env, message] of refusals) {
    it(`refuses ${what} with a line naming the variable`, () => {
      expect(() => loadConfig(env)).toThrow(message)
    })
  }
})
