import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { defaultMaxHeapUsedBytes, loadConfig } from '../src/config.js'

describe('loadConfig', () => {
  it('uses the documented defaults', () => {
    expect(loadConfig({ API_TOKENS: 'a' })).toEqual({
      port: 3000, host: '127.0.0.1', logLevel: 'info', tokens: ['a'], databaseUrl: 'memory:',
      bodyLimit: 16384, maxPlants: 1000000, shutdownTimeoutMs: 8000,
      http: { headersTimeoutMs: 10000, requestTimeoutMs: 15000, connectionTimeoutMs: 30000, keepAliveTimeoutMs: 72000, maxHeaderBytes: 16384 },
      overload: { maxEventLoopDelayMs: 200, maxHeapUsedBytes: defaultMaxHeapUsedBytes(), maxRssBytes: 0, sampleIntervalMs: 1000 }
    })
  })

  it('reads CORS_ORIGINS as exact origins, trimming blanks and duplicates; * alone is any origin', () => {
    expect(loadConfig({ API_TOKENS: 'a', CORS_ORIGINS: ' https://a.example, http://localhost:5173,,https://a.example, http://[::1]:8080 ' }).corsOrigins)
      .toEqual(['https://a.example', 'http://localhost:5173', 'http://[::1]:8080'])
    expect(loadConfig({ API_TOKENS: 'a', CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*'])
  })

  it('leaves CORS off when CORS_ORIGINS is blank', () => {
    expect(loadConfig({ API_TOKENS: 'a', CORS_ORIGINS: ' , ' }).corsOrigins).toBeUndefined()
  })

  it('reads comma-separated tokens, trimming blanks and duplicates', () => {
    expect(loadConfig({ API_TOKENS: ' a, b,,a ' }).tokens).toEqual(['a', 'b'])
  })

  it('reads one token per line from API_TOKENS_FILE', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'plants-')), 'tokens')
    writeFileSync(file, 'one\r\ntwo\n\n')
    expect(loadConfig({ API_TOKENS_FILE: file })).toMatchObject({ tokens: ['one', 'two'], tokensFile: file })
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
    ['a CORS origin with a path', { API_TOKENS: 'a', CORS_ORIGINS: 'https://a.example/app' }, /^CORS_ORIGINS: origin 1 \(https:\/\/a\.example\/app\) is not scheme:\/\/host\[:port\] as a browser sends it: write https:\/\/a\.example \(/],
    ['a CORS origin with a trailing slash', { API_TOKENS: 'a', CORS_ORIGINS: 'https://a.example, https://b.example/' }, /^CORS_ORIGINS: origin 2 \(https:\/\/b\.example\/\) .* write https:\/\/b\.example /],
    ['a CORS origin with capitals or a default port', { API_TOKENS: 'a', CORS_ORIGINS: 'https://A.example:443' }, /^CORS_ORIGINS: origin 1 .* write https:\/\/a\.example /],
    ['a CORS origin without a scheme', { API_TOKENS: 'a', CORS_ORIGINS: 'a.example' }, /^CORS_ORIGINS: origin 1 \(a\.example\) is not scheme:\/\/host\[:port\]$/],
    ['a CORS origin of another scheme', { API_TOKENS: 'a', CORS_ORIGINS: 'ftp://a.example' }, /^CORS_ORIGINS: origin 1 .*: the scheme must be http or https$/],
    ['a CORS origin pattern', { API_TOKENS: 'a', CORS_ORIGINS: 'https://*.example' }, /^CORS_ORIGINS: origin 1 .*: patterns are not supported/],
    ['* beside other CORS origins', { API_TOKENS: 'a', CORS_ORIGINS: '*, https://a.example' }, /^CORS_ORIGINS: \* allows every origin: write it alone/]
  ]
  for (const [what, env, message] of refusals) {
    it(`refuses ${what} with a line naming the variable`, () => {
      expect(() => loadConfig(env)).toThrow(message)
    })
  }
})
