import { getHeapStatistics } from 'node:v8'
import { readEnv } from './config/env.js'
import { parseCorsOrigins } from './config/cors-origins.js'
import { parseTokens, readTokensFile, type TokenEntry } from './config/tokens.js'
import { ConfigError } from './lib/config-error.js'
import { memoryLimit } from './lib/memory-limit.js'

export { ConfigError } from './lib/config-error.js'
export { parseCorsOrigins } from './config/cors-origins.js'
export { parseTokens, readTokensFile, type TokenEntry } from './config/tokens.js'

export interface Config {
  port: number
  host: string
  logLevel: string
  /** Bytes of log lines that may wait for the log reader; lines beyond are dropped and counted. */
  logBufferMaxBytes: number
  /** Accepted bearer tokens, with their client names; never empty. */
  tokens: TokenEntry[]
  /** Where the tokens came from, when a file: the service can read it again (rotation). */
  tokensFile?: string
  databaseUrl: string
  /** PostgreSQL connections of this process (DATABASE_POOL_MAX). */
  databasePoolMax: number
  /** PostgreSQL: a statement running longer is cancelled by the server and answered 503. */
  databaseStatementTimeoutMs: number
  /** PostgreSQL: named prepared statements, for a direct connection or session pooling only. */
  databasePreparedStatements: boolean
  bodyLimit: number
  maxPlants: number
  /** Memory store: a new plant that would take the plants' own bytes past this is a 507; 0: off. */
  memoryStoreMaxBytes: number
  shutdownTimeoutMs: number
  /** SIGTERM: /readyz answers 503 while requests are still served this long, then the drain begins. */
  shutdownDelayMs: number
  http: HttpLimits
  overload: OverloadLimits
  /** Absent when RATE_LIMIT_PER_MINUTE is 0 (the default): no rate limit. */
  rateLimit?: RateLimitConfig
  /**
   * Origins whose web pages may call the service (CORS), exactly as browsers send them in Origin;
   * `['*']` means any origin. Absent when CORS_ORIGINS is unset or blank: no CORS headers at all.
   */
  corsOrigins?: string[]
  /** Where GET /metrics is served; absent when METRICS_PORT is unset: no metrics at all. */
  metrics?: MetricsConfig
  /** OTEL_EXPORTER_OTLP_ENDPOINT: where spans are sent (OTLP/HTTP); absent: no tracing. */
  otlpEndpoint?: string
}

export interface MetricsConfig {
  port: number
  host: string
}

/** How long a client may take; a slower one is cut off so that it cannot hold a connection. */
export interface HttpLimits {
  /** All request headers must arrive within this (Node's server.headersTimeout); else 408. */
  headersTimeoutMs: number
  /** The whole request, headers and body, must arrive within this (server.requestTimeout); else 408. */
  requestTimeoutMs: number
  /** A socket with no traffic at all for this long is closed (server.setTimeout). */
  connectionTimeoutMs: number
  /** An idle keep-alive connection is closed after this; keep it above a proxy's idle timeout. */
  keepAliveTimeoutMs: number
  /** Request line and headers together; larger ones are refused with 431. */
  maxHeaderBytes: number
}

/** When to shed requests with 503 instead of queueing them; 0 turns a check off. */
export interface OverloadLimits {
  /** Mean event-loop delay over one sample interval. */
  maxEventLoopDelayMs: number
  maxHeapUsedBytes: number
  maxRssBytes: number
  /** Resident anonymous memory (RssAnon: what the process has written, not Node's mapped files). */
  maxRssAnonBytes: number
  /** How often the process is sampled; also the Retry-After of a shed request. */
  sampleIntervalMs: number
}

export interface RateLimitConfig {
  /** Requests per token per minute. */
  perMinute: number
  /** Shared counters in Redis (every replica sees the same count); absent: per process. */
  redisUrl?: string
}

export const defaultHttpLimits: HttpLimits = {
  headersTimeoutMs: 10000,
  requestTimeoutMs: 15000,
  connectionTimeoutMs: 30000,
  keepAliveTimeoutMs: 72000,
  maxHeaderBytes: 16384
}

/** 90 % of V8's heap limit: shedding before the process dies of an out-of-memory error. */
export const defaultMaxHeapUsedBytes = (): number => Math.floor(getHeapStatistics().heap_size_limit * 0.9)

export const defaultOverloadLimits = (): OverloadLimits => ({
  maxEventLoopDelayMs: 200,
  maxHeapUsedBytes: defaultMaxHeapUsedBytes(),
  maxRssBytes: 0,
  maxRssAnonBytes: 0,
  sampleIntervalMs: 1000
})

/**
 * Under a memory limit, by default: the memory store is full (507) when its plants hold an eighth
 * of it (their names, tags and id index: 12 MiB of a 96 MiB container, about 150,000 plants with
 * 20-byte names), and requests are shed (503) while the resident anonymous memory is at 85 % of it.
 * The rest is the process itself under load (about 60 MiB of RssAnon measured in a 96 MiB
 * container: heap, buffers), the log's buffer (LOG_BUFFER_MAX_BYTES) and the pages of Node's own
 * binary that the system keeps resident (docs/operating.md, "Memory: 507 means the plants filled the store, 503 means load").
 */
export const MEMORY_STORE_SHARE_OF_LIMIT = 1 / 8
export const RSS_ANON_SHARE_OF_LIMIT = 0.85
export const HEAP_SHARE_OF_LIMIT = 0.5

/**
 * LOG_BUFFER_MAX_BYTES by default: 1/32 of a memory limit (3 MiB of a 96 MiB container: about
 * 20,000 access lines, 45 s of a 64 KB/s reader), at most 16 MiB (also without a limit), at least
 * 64 KiB (a pipe's own buffer).
 */
export function defaultLogBufferMaxBytes (limit: number | undefined): number {
  return limit === undefined ? LOG_BUFFER_MAX : Math.min(LOG_BUFFER_MAX, Math.max(LOG_BUFFER_MIN, Math.floor(limit / 32)))
}
const LOG_BUFFER_MAX = 16 * 1024 * 1024
const LOG_BUFFER_MIN = 64 * 1024

/** What loadConfig reads of the system besides the environment; tests pass their own. */
export interface System {
  /** The process's memory limit (a container's), undefined when there is none. */
  memoryLimit: () => number | undefined
}

/** Reads and checks the configuration once, at start. Throws ConfigError naming the variable. */
export function loadConfig (env: NodeJS.ProcessEnv, system: System = { memoryLimit }): Config {
  const limit = system.memoryLimit()
  // An empty value turns these off, so that a variable the Docker image sets can be unset with `-e NAME=`.
  const values = readEnv({
    ...env,
    METRICS_PORT: env.METRICS_PORT?.trim() === '' ? undefined : env.METRICS_PORT,
    OTEL_EXPORTER_OTLP_ENDPOINT: env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() === '' ? undefined : env.OTEL_EXPORTER_OTLP_ENDPOINT
  })
  if (env.MEMORY_STORE_MAX_RSS_BYTES !== undefined) {
    // Its meaning is gone, not moved: a setting silently ignored would be worse than none.
    throw new ConfigError('MEMORY_STORE_MAX_RSS_BYTES is replaced: MEMORY_STORE_MAX_BYTES bounds the bytes the plants hold (507), MAX_RSS_ANON_BYTES sheds load on resident memory (503)')
  }
  // A blank API_TOKENS counts as unset, beside API_TOKENS_FILE too.
  const list = values.API_TOKENS?.trim() === '' ? undefined : values.API_TOKENS
  if (list !== undefined && values.API_TOKENS_FILE !== undefined) {
    throw new ConfigError('API_TOKENS and API_TOKENS_FILE are both set: set only one')
  }
  let tokens: TokenEntry[]
  if (values.API_TOKENS_FILE !== undefined) tokens = readTokensFile(values.API_TOKENS_FILE)
  else if (list !== undefined) tokens = parseTokens(list, 'API_TOKENS')
  else throw new ConfigError('API_TOKENS: set API_TOKENS (comma-separated) or API_TOKENS_FILE; the service never runs open')

  if (values.HEADERS_TIMEOUT_MS > values.REQUEST_TIMEOUT_MS) {
    throw new ConfigError(`HEADERS_TIMEOUT_MS (${values.HEADERS_TIMEOUT_MS}) must not be larger than REQUEST_TIMEOUT_MS (${values.REQUEST_TIMEOUT_MS})`)
  }
  if (values.REDIS_URL !== undefined && !/^rediss?:\/\//.test(values.REDIS_URL)) {
    throw new ConfigError('REDIS_URL: must start with redis:// or rediss://')
  }
  const corsOrigins = values.CORS_ORIGINS === undefined ? undefined : parseCorsOrigins(values.CORS_ORIGINS)
  if (values.METRICS_PORT !== 0 && values.METRICS_PORT === values.PORT) {
    throw new ConfigError(`METRICS_PORT (${values.METRICS_PORT}) must differ from PORT: metrics are never served on the API port`)
  }
  const otlpEndpoint = values.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()
  if (otlpEndpoint !== undefined && !isHttpUrl(otlpEndpoint)) {
    throw new ConfigError('OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL, the OTLP/HTTP receiver (e.g. http://127.0.0.1:4318)')
  }

  return {
    port: values.PORT,
    host: values.HOST,
    logLevel: values.LOG_LEVEL,
    logBufferMaxBytes: values.LOG_BUFFER_MAX_BYTES ?? defaultLogBufferMaxBytes(limit),
    tokens,
    ...(values.API_TOKENS_FILE === undefined ? {} : { tokensFile: values.API_TOKENS_FILE }),
    databaseUrl: values.DATABASE_URL === '' ? 'memory:' : values.DATABASE_URL,
    databasePoolMax: values.DATABASE_POOL_MAX,
    databaseStatementTimeoutMs: values.DATABASE_STATEMENT_TIMEOUT_MS,
    databasePreparedStatements: values.DATABASE_PREPARED_STATEMENTS === 'on',
    bodyLimit: values.BODY_LIMIT,
    maxPlants: values.MAX_PLANTS,
    memoryStoreMaxBytes: values.MEMORY_STORE_MAX_BYTES ??
      (limit === undefined ? 0 : Math.floor(limit * MEMORY_STORE_SHARE_OF_LIMIT)),
    shutdownTimeoutMs: values.SHUTDOWN_TIMEOUT_MS,
    shutdownDelayMs: values.SHUTDOWN_DELAY_MS,
    http: {
      headersTimeoutMs: values.HEADERS_TIMEOUT_MS,
      requestTimeoutMs: values.REQUEST_TIMEOUT_MS,
      connectionTimeoutMs: values.CONNECTION_TIMEOUT_MS,
      keepAliveTimeoutMs: values.KEEP_ALIVE_TIMEOUT_MS,
      maxHeaderBytes: values.MAX_HEADER_BYTES
    },
    overload: {
      ...defaultOverloadLimits(),
      maxEventLoopDelayMs: values.MAX_EVENT_LOOP_DELAY_MS,
      // V8 sizes its heap from the machine, not the container (259 MiB in a 96 MiB one): under a
      // limit, shed once half of it is heap in use, before the heap alone can reach it.
      ...(values.MAX_HEAP_USED_BYTES === undefined
        ? (limit === undefined ? {} : { maxHeapUsedBytes: Math.min(defaultMaxHeapUsedBytes(), Math.floor(limit * HEAP_SHARE_OF_LIMIT)) })
        : { maxHeapUsedBytes: values.MAX_HEAP_USED_BYTES }),
      maxRssBytes: values.MAX_RSS_BYTES,
      maxRssAnonBytes: values.MAX_RSS_ANON_BYTES ?? (limit === undefined ? 0 : Math.floor(limit * RSS_ANON_SHARE_OF_LIMIT))
    },
    ...(values.RATE_LIMIT_PER_MINUTE === 0
      ? {}
      : { rateLimit: { perMinute: values.RATE_LIMIT_PER_MINUTE, ...(values.REDIS_URL === undefined ? {} : { redisUrl: values.REDIS_URL }) } }),
    ...(corsOrigins === undefined ? {} : { corsOrigins }),
    ...(values.METRICS_PORT === undefined ? {} : { metrics: { port: values.METRICS_PORT, host: values.METRICS_HOST ?? values.HOST } }),
    ...(otlpEndpoint === undefined ? {} : { otlpEndpoint })
  }
}

/** An http or https URL (both are special schemes: the WHATWG parser refuses them without a host). */
function isHttpUrl (text: string): boolean {
  const url = URL.parse(text)
  return url !== null && (url.protocol === 'http:' || url.protocol === 'https:')
}
