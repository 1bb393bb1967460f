import { getHeapStatistics } from 'node:v8'
import { readEnv } from './env.js'
import { parseTokens, readTokensFile } from './tokens.js'
import { ConfigError } from '../lib/config-error.js'
import { memoryLimit } from '../lib/memory-limit.js'

export { ConfigError } from '../lib/config-error.js'
export { parseTokens, readTokensFile, type TokenEntry } from './tokens.js'

/** The settings, checked once at start; each comes from a variable of docs/configuration.md. */
export type Config = ReturnType<typeof loadConfig>

/** Shedding before the process dies of an out-of-memory error. */
export const defaultMaxHeapUsedBytes = (): number => Math.floor(getHeapStatistics().heap_size_limit * 0.9)

/**
 * MAX_PLANTS under a memory limit: one plant per 8 KiB of it (the default, at most a million, and the most an
 * explicit value may ask). A plant with a 512-byte name takes about 600 bytes in the Map: full (507) before the heap.
 */
export const LIMIT_BYTES_PER_PLANT = 8192

/** Reads and checks the configuration once, at start. Throws ConfigError naming the variable. */
export function loadConfig (env: NodeJS.ProcessEnv, system = { memoryLimit }) {
  const limit = system.memoryLimit() ?? Infinity
  const values = readEnv(env)
  const corsOrigins = parseCorsOrigins(values.CORS_ORIGINS ?? '')
  if (values.API_TOKENS !== undefined && values.API_TOKENS_FILE !== undefined) {
    throw new ConfigError('API_TOKENS and API_TOKENS_FILE are both set: set only one')
  }
  if (values.HEADERS_TIMEOUT_MS > values.REQUEST_TIMEOUT_MS) {
    throw new ConfigError('HEADERS_TIMEOUT_MS must not be larger than REQUEST_TIMEOUT_MS')
  }
  const plantsHeld = Math.floor(limit / LIMIT_BYTES_PER_PLANT)
  if (values.MAX_PLANTS !== undefined && values.MAX_PLANTS > plantsHeld) {
    const mib = Math.round(limit / 2 ** 20)
    throw new ConfigError(`MAX_PLANTS (${values.MAX_PLANTS}) is more than the memory limit (${mib} MiB) holds: ` +
      `at most ${plantsHeld}, one plant per 8 KiB of it`)
  }
  if (values.METRICS_PORT !== 0 && values.METRICS_PORT === values.PORT) {
    throw new ConfigError('METRICS_PORT must differ from PORT: metrics are never served on the API port')
  }

  return {
    port: values.PORT,
    host: values.HOST,
    logLevel: values.LOG_LEVEL,
    // A 32nd of a memory limit, between a pipe's own buffer and 2 MiB: held lines cost the heap 2-4 times their size.
    logBufferMaxBytes: values.LOG_BUFFER_MAX_BYTES ??
      Math.min(2 * 1024 * 1024, Math.max(64 * 1024, Math.floor(limit / 32))),
    // Never empty: the service never runs open.
    tokens: values.API_TOKENS_FILE === undefined
      ? parseTokens(values.API_TOKENS ?? '', 'API_TOKENS')
      : readTokensFile(values.API_TOKENS_FILE),
    ...(values.API_TOKENS_FILE !== undefined && { tokensFile: values.API_TOKENS_FILE }),
    databaseUrl: values.DATABASE_URL,
    databasePoolMax: values.DATABASE_POOL_MAX,
    databaseStatementTimeoutMs: values.DATABASE_STATEMENT_TIMEOUT_MS,
    bodyLimit: values.BODY_LIMIT,
    maxPlants: values.MAX_PLANTS ?? Math.min(1000000, plantsHeld),
    shutdownTimeoutMs: values.SHUTDOWN_TIMEOUT_MS,
    shutdownDelayMs: values.SHUTDOWN_DELAY_MS,
    http: {
      headersTimeoutMs: values.HEADERS_TIMEOUT_MS,
      requestTimeoutMs: values.REQUEST_TIMEOUT_MS,
      connectionTimeoutMs: values.CONNECTION_TIMEOUT_MS,
      keepAliveTimeoutMs: values.KEEP_ALIVE_TIMEOUT_MS,
      maxHeaderBytes: values.MAX_HEADER_BYTES
    },
    // When to shed requests with 503 instead of queueing them; 0 turns a check off.
    overload: {
      maxEventLoopDelayMs: values.MAX_EVENT_LOOP_DELAY_MS,
      // V8 sizes its heap from the machine, not the container: under a limit, shed at half of it in heap.
      maxHeapUsedBytes: values.MAX_HEAP_USED_BYTES ?? Math.min(defaultMaxHeapUsedBytes(), Math.floor(limit / 2)),
      maxRssBytes: values.MAX_RSS_BYTES,
      // 85 % of a limit in resident memory; the rest is the process under load.
      maxRssAnonBytes: values.MAX_RSS_ANON_BYTES ?? (limit === Infinity ? 0 : Math.floor(limit * 0.85)),
      sampleIntervalMs: 1000
    },
    ...(values.RATE_LIMIT_PER_MINUTE > 0 && {
      rateLimit: {
        perMinute: values.RATE_LIMIT_PER_MINUTE,
        ...(values.REDIS_URL !== undefined && { redisUrl: values.REDIS_URL })
      }
    }),
    ...(corsOrigins.length > 0 && { corsOrigins }),
    ...(values.METRICS_PORT !== undefined && {
      metrics: { port: values.METRICS_PORT, host: values.METRICS_HOST ?? values.HOST }
    }),
    ...(values.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined && { otlpEndpoint: values.OTEL_EXPORTER_OTLP_ENDPOINT })
  }
}

/**
 * CORS_ORIGINS: comma-separated origins exactly as a browser sends Origin (they are compared exactly),
 * or `*` alone for any. No patterns: `*` inside an origin is refused, not taken as a wildcard.
 */
function parseCorsOrigins (text: string): string[] {
  const origins = [...new Set(text.split(',').map((origin) => origin.trim()).filter((origin) => origin !== ''))]
  if (origins.join() === '*') return origins
  const bad = origins.findIndex((origin) =>
    origin.includes('*') || URL.parse(origin)?.origin !== origin || !origin.startsWith('http'))
  if (bad === -1) return origins
  throw new ConfigError(`CORS_ORIGINS: origin ${bad + 1} (${origins[bad]}) is not http(s)://host[:port] as a browser ` +
    'sends it (lower-case host, no path, no default port), nor * alone for any origin')
}
