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
    ['a METRICS_PORT that is not a number', { API_TOKENS: 'a', METRICS_PORT: 'x' }, /^METRICS_PORT must be integer/],
    ['a METRICS_PORT out of range', { API_TOKENS: 'a', METRICS_PORT: '65536' }, /^METRICS_PORT must be <= 65535/],
    ['a METRICS_PORT equal to PORT', { API_TOKENS: 'a', PORT: '8080', METRICS_PORT: '8080' }, /^METRICS_PORT \(8080\) must differ from PORT/],
    ['an empty METRICS_HOST', { API_TOKENS: 'a', METRICS_PORT: '9464', METRICS_HOST: '' }, /^METRICS_HOST must NOT have fewer than 1 characters/],
    ['an OTLP endpoint that is not a URL', { API_TOKENS: 'a', OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /^OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:\/\/ or https:\/\/ URL/],
    ['an OTLP endpoint over gRPC', { API_TOKENS: 'a', OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' }, /^OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:\/\/ or https:\/\/ URL/]
  ]
  for (const [what, env, message] of refusals) {
    it(`refuses ${what} with a line naming the variable`, () => {
      expect(() => loadConfig(env)).toThrow(message)
    })
  }

  it('serves no metrics and exports no traces unless asked (METRICS_PORT, OTEL_EXPORTER_OTLP_ENDPOINT); empty counts as unset', () => {
    for (const env of [{ API_TOKENS: 'a' }, { API_TOKENS: 'a', METRICS_PORT: '', METRICS_HOST: '0.0.0.0', OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }]) {
      const config = loadConfig(env)
      expect(config).not.toHaveProperty('metrics')
      expect(config).not.toHaveProperty('otlpEndpoint')
    }
  })

  it('listens for metrics on METRICS_PORT at METRICS_HOST, which defaults to HOST', () => {
    expect(loadConfig({ API_TOKENS: 'a', METRICS_PORT: '9464' }).metrics).toEqual({ port: 9464, host: '127.0.0.1' })
    expect(loadConfig({ API_TOKENS: 'a', HOST: '0.0.0.0', METRICS_PORT: '9464' }).metrics).toEqual({ port: 9464, host: '0.0.0.0' })
    expect(loadConfig({ API_TOKENS: 'a', HOST: '0.0.0.0', METRICS_PORT: '9464', METRICS_HOST: '10.0.0.5' }).metrics).toEqual({ port: 9464, host: '10.0.0.5' })
    // Both 0: each gets a free port of its own.
    expect(loadConfig({ API_TOKENS: 'a', PORT: '0', METRICS_PORT: '0' }).metrics).toEqual({ port: 0, host: '127.0.0.1' })
  })

  it('reads OTEL_EXPORTER_OTLP_ENDPOINT as given', () => {
    expect(loadConfig({ API_TOKENS: 'a', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).otlpEndpoint).toBe('http://collector:4318')
  })
})
