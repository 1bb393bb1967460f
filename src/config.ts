import { getHeapStatistics } from 'node:v8'
import { readEnv, type Env } from './config/env.js'
import { parseCorsOrigins } from './config/cors-origins.js'
import { parseTokens, readTokensFile, type TokenEntry } from './config/tokens.js'
import { ConfigError } from './lib/config-error.js'
import { memoryLimit } from './lib/memory-limit.js'

export { ConfigError } from './lib/config-error.js'
export { parseTokens, readTokensFile, type TokenEntry } from './config/tokens.js'

/** The settings, checked once at start; each comes from a variable of docs/configuration.md. */
export type Config = ReturnType<typeof loadConfig>

/** Shedding before the process dies of an out-of-memory error. */
export const defaultMaxHeapUsedBytes = (): number => Math.floor(getHeapStatistics().heap_size_limit * 0.9)

/**
 * Shares of a container's memory limit: the memory store is full (507) at an eighth, requests are
 * shed (503) at 85 % resident; the rest is the process under load (docs/operating.md, "Memory").
 */
export const MEMORY_STORE_SHARE_OF_LIMIT = 1 / 8
export const RSS_ANON_SHARE_OF_LIMIT = 0.85

/** The HTTP server's limits (app.ts). */
const httpLimits = (values: Env) => ({
  headersTimeoutMs: values.HEADERS_TIMEOUT_MS,
  requestTimeoutMs: values.REQUEST_TIMEOUT_MS,
  connectionTimeoutMs: values.CONNECTION_TIMEOUT_MS,
  keepAliveTimeoutMs: values.KEEP_ALIVE_TIMEOUT_MS,
  maxHeaderBytes: values.MAX_HEADER_BYTES
})

/** When to shed requests with 503 instead of queueing them; 0 turns a check off. */
const overloadLimits = (values: Env, limit: number | undefined) => ({
  maxEventLoopDelayMs: values.MAX_EVENT_LOOP_DELAY_MS,
  // V8 sizes its heap from the machine, not the container: under a limit, shed at half of it in heap.
  maxHeapUsedBytes: values.MAX_HEAP_USED_BYTES ??
    Math.min(defaultMaxHeapUsedBytes(), Math.floor((limit ?? Infinity) / 2)),
  maxRssBytes: values.MAX_RSS_BYTES,
  maxRssAnonBytes: values.MAX_RSS_ANON_BYTES ?? share(limit, RSS_ANON_SHARE_OF_LIMIT),
  sampleIntervalMs: 1000
})

// The defaults are the schema's (config/env.ts), for callers that build an app without the environment.
const defaults = readEnv({})
export const defaultHttpLimits = httpLimits(defaults)
export const defaultOverloadLimits = () => overloadLimits(defaults, undefined)

/** Reads and checks the configuration once, at start. Throws ConfigError naming the variable. */
export function loadConfig (env: NodeJS.ProcessEnv, system = { memoryLimit }) {
  const limit = system.memoryLimit()
  const values = readEnv(env)
  if (env.MEMORY_STORE_MAX_RSS_BYTES !== undefined) {
    throw new ConfigError('MEMORY_STORE_MAX_RSS_BYTES is replaced: MEMORY_STORE_MAX_BYTES bounds the bytes ' +
      'the plants hold (507), MAX_RSS_ANON_BYTES sheds load on resident memory (503)')
  }
  if (values.API_TOKENS !== undefined && values.API_TOKENS_FILE !== undefined) {
    throw new ConfigError('API_TOKENS and API_TOKENS_FILE are both set: set only one')
  }
  // Never empty: the service never runs open.
  let tokens: TokenEntry[]
  if (values.API_TOKENS_FILE !== undefined) tokens = readTokensFile(values.API_TOKENS_FILE)
  else if (values.API_TOKENS !== undefined) tokens = parseTokens(values.API_TOKENS, 'API_TOKENS')
  else {
    throw new ConfigError('API_TOKENS: set API_TOKENS (comma-separated) or API_TOKENS_FILE; ' +
      'the service never runs open')
  }

  if (values.HEADERS_TIMEOUT_MS > values.REQUEST_TIMEOUT_MS) {
    throw new ConfigError(`HEADERS_TIMEOUT_MS (${values.HEADERS_TIMEOUT_MS}) must not be larger than ` +
      `REQUEST_TIMEOUT_MS (${values.REQUEST_TIMEOUT_MS})`)
  }
  if (values.REDIS_URL !== undefined && !/^rediss?:\/\//.test(values.REDIS_URL)) {
    throw new ConfigError('REDIS_URL: must start with redis:// or rediss://')
  }
  const corsOrigins = values.CORS_ORIGINS === undefined ? undefined : parseCorsOrigins(values.CORS_ORIGINS)
  if (values.METRICS_PORT !== 0 && values.METRICS_PORT === values.PORT) {
    throw new ConfigError(`METRICS_PORT (${values.METRICS_PORT}) must differ from PORT: ` +
      'metrics are never served on the API port')
  }
  const otlpEndpoint = values.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()
  // http and https are special schemes: the WHATWG parser refuses them without a host.
  if (otlpEndpoint !== undefined) {
    const scheme = URL.parse(otlpEndpoint)?.protocol
    if (scheme !== 'http:' && scheme !== 'https:') {
      throw new ConfigError('OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL, the OTLP/HTTP ' +
        'receiver (e.g. http://127.0.0.1:4318)')
    }
  }

  return {
    port: values.PORT,
    host: values.HOST,
    logLevel: values.LOG_LEVEL,
    // A 32nd of a memory limit, between a pipe's own buffer and 16 MiB.
    logBufferMaxBytes: values.LOG_BUFFER_MAX_BYTES ??
      Math.min(16 * 1024 * 1024, Math.max(64 * 1024, Math.floor((limit ?? Infinity) / 32))),
    tokens,
    ...(values.API_TOKENS_FILE !== undefined && { tokensFile: values.API_TOKENS_FILE }),
    databaseUrl: values.DATABASE_URL,
    databasePoolMax: values.DATABASE_POOL_MAX,
    databaseStatementTimeoutMs: values.DATABASE_STATEMENT_TIMEOUT_MS,
    databasePreparedStatements: values.DATABASE_PREPARED_STATEMENTS === 'on',
    bodyLimit: values.BODY_LIMIT,
    maxPlants: values.MAX_PLANTS,
    memoryStoreMaxBytes: values.MEMORY_STORE_MAX_BYTES ?? share(limit, MEMORY_STORE_SHARE_OF_LIMIT),
    shutdownTimeoutMs: values.SHUTDOWN_TIMEOUT_MS,
    shutdownDelayMs: values.SHUTDOWN_DELAY_MS,
    http: httpLimits(values),
    overload: overloadLimits(values, limit),
    ...(values.RATE_LIMIT_PER_MINUTE > 0 && {
      rateLimit: {
        perMinute: values.RATE_LIMIT_PER_MINUTE,
        ...(values.REDIS_URL !== undefined && { redisUrl: values.REDIS_URL })
      }
    }),
    ...(corsOrigins !== undefined && { corsOrigins }),
    ...(values.METRICS_PORT !== undefined && {
      metrics: { port: values.METRICS_PORT, host: values.METRICS_HOST ?? values.HOST }
    }),
    ...(otlpEndpoint !== undefined && { otlpEndpoint })
  }
}

/** A share of the memory limit; without a limit, 0 (off). */
function share (limit: number | undefined, fraction: number): number {
  return limit === undefined ? 0 : Math.floor(limit * fraction)
}
