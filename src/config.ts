import { hash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { getHeapStatistics } from 'node:v8'
import { Type, type Static } from '@sinclair/typebox'
import { memoryLimit } from './lib/memory-limit.js'

/** The environment the service reads; names and defaults are the README's configuration table. */
const Env = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  LOG_LEVEL: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)), { default: 'info' }),
  // Log lines waiting for a slow reader; the default comes from a container's limit.
  LOG_BUFFER_MAX_BYTES: Type.Optional(Type.Integer({ minimum: 65536, maximum: 1073741824 })),
  API_TOKENS: Type.Optional(Type.String()),
  API_TOKENS_FILE: Type.Optional(Type.String({ minLength: 1 })),
  DATABASE_URL: Type.String({ default: 'memory:' }),
  // PostgreSQL only: connections per process, and the longest one statement may run (SET LOCAL).
  DATABASE_POOL_MAX: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
  DATABASE_STATEMENT_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600000, default: 5000 }),
  // Off by default: named prepared statements break behind a transaction-mode pooler.
  DATABASE_PREPARED_STATEMENTS: Type.Union([Type.Literal('off'), Type.Literal('on')], { default: 'off' }),
  BODY_LIMIT: Type.Integer({ minimum: 64, maximum: 1048576, default: 16384 }),
  MAX_PLANTS: Type.Integer({ minimum: 1, maximum: 16000000, default: 1000000 }),
  // Memory store: full (507) at this resident memory; the default comes from a container's limit.
  MEMORY_STORE_MAX_RSS_BYTES: Type.Optional(Type.Integer({ minimum: 0 })),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600000, default: 8000 }),
  // Slow and broken clients (see HttpLimits).
  HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600000, default: 10000 }),
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600000, default: 15000 }),
  CONNECTION_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600000, default: 30000 }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600000, default: 72000 }),
  MAX_HEADER_BYTES: Type.Integer({ minimum: 1024, maximum: 65536, default: 16384 }),
  // Overload (see OverloadLimits); 0 turns a check off.
  MAX_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 0, maximum: 60000, default: 200 }),
  MAX_HEAP_USED_BYTES: Type.Optional(Type.Integer({ minimum: 0 })),
  MAX_RSS_BYTES: Type.Integer({ minimum: 0, default: 0 }),
  // Per-token rate limit: off unless set.
  RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 0, maximum: 100000000, default: 0 }),
  REDIS_URL: Type.Optional(Type.String({ minLength: 1 })),
  // Cross-origin browser access: off unless set.
  CORS_ORIGINS: Type.Optional(Type.String()),
  // Observability: no metrics listener and no trace export unless set (empty counts as unset).
  METRICS_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  METRICS_HOST: Type.Optional(Type.String({ minLength: 1 })),
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(Type.String({ minLength: 1 }))
})
type Env = Static<typeof Env>

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
  /** Memory store: a new plant is a 507 while the resident anonymous memory is at least this; 0: off. */
  memoryStoreMaxRssBytes: number
  shutdownTimeoutMs: number
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
  sampleIntervalMs: 1000
})

/**
 * The memory store's default bound under a memory limit: three quarters of it. The quarter left is
 * for the pages the system must keep resident besides (Node's binary and libraries, about 25 MB of
 * them in use) and for the load's own buffers. Measured in a 96 MiB cgroup: at 75 % the store filled,
 * then answered 507s, with a p99 of tens of ms and no OOM kill (README, Docker).
 */
export const MEMORY_STORE_SHARE_OF_LIMIT = 0.75

/**
 * LOG_BUFFER_MAX_BYTES by default: 1/32 of a memory limit (3 MiB of a 96 MiB container: about
 * 20,000 access lines, 45 s of a 64 KB/s reader), at most 16 MiB (also without a limit), at least
 * 64 KiB (a pipe's own buffer). Beside the store's three quarters, it leaves the rest of the limit
 * to the process itself.
 */
export function defaultLogBufferMaxBytes (limit: number | undefined): number {
  return limit === undefined ? LOG_BUFFER_MAX : Math.min(LOG_BUFFER_MAX, Math.max(LOG_BUFFER_MIN, Math.floor(limit / 32)))
}
const LOG_BUFFER_MAX = 16 * 1024 * 1024
const LOG_BUFFER_MIN = 64 * 1024

/** A bad setting: its message is the one line the process prints before it exits 1. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** RFC 6750 b64token: what can follow "Bearer " in a header. It has no ':', which separates a client name. */
const TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/
const CLIENT_NAME = /^[A-Za-z0-9._-]{1,64}$/
const SHA256_HEX = /^[0-9A-Fa-f]{64}$/

/**
 * One accepted token, as API_TOKENS or API_TOKENS_FILE lists it: `token`, `name:token`, or
 * `name:sha256:<64 hex digits>` (only the token's SHA-256 is known, so a hashed entry is always named).
 */
export type TokenEntry = { name?: string, token: string } | { name: string, sha256: string }

/**
 * Parses the token list of API_TOKENS (entries separated by commas) or API_TOKENS_FILE (one entry a
 * line); blanks around an entry and blank entries are ignored. An error names the variable and the
 * entry's position (its line in the file, counting blank lines), never the entry's text: a mistyped
 * line could be a token.
 *
 * Names are unique. The same token listed twice without a name is one entry (as before names
 * existed); the same token under a name and again under another name, or without one, is refused:
 * a token belongs to one client, or its requests would be logged and counted under either. Tokens
 * are compared through their SHA-256, so a plain entry and a hashed entry of the same token are
 * found too.
 */
export function parseTokens (text: string, source: 'API_TOKENS' | 'API_TOKENS_FILE'): TokenEntry[] {
  const unit = source === 'API_TOKENS' ? 'entry' : 'line'
  const items = text.split(source === 'API_TOKENS' ? ',' : /\r?\n/)
  const entries: TokenEntry[] = []
  const names = new Map<string, number>()
  const digests = new Map<string, { position: number, named: boolean }>()
  for (let index = 0; index < items.length; index++) {
    const item = (items[index] ?? '').trim()
    if (item === '') continue
    const position = index + 1
    const bad = (problem: string): ConfigError => new ConfigError(`${source} ${unit} ${position}: ${problem}`)
    const colon = item.indexOf(':')
    const name = colon === -1 ? undefined : item.slice(0, colon)
    const rest = colon === -1 ? item : item.slice(colon + 1)
    if (name === 'sha256') throw bad('a hashed entry needs a client name in front: name:sha256:<64 hex digits>')
    if (name !== undefined && !CLIENT_NAME.test(name)) throw bad('a client name is 1 to 64 characters of A-Z a-z 0-9 . _ - (then a colon, then the token)')
    if (rest === '') throw bad('no token after the client name')
    let entry: TokenEntry
    let digest: string
    if (name !== undefined && rest.startsWith('sha256:')) {
      const hex = rest.slice('sha256:'.length)
      if (!SHA256_HEX.test(hex)) throw bad('sha256: must be followed by exactly 64 hex digits, the SHA-256 of the token')
      digest = hex.toLowerCase()
      entry = { name, sha256: digest }
    } else {
      if (!TOKEN.test(rest)) throw bad('the token has characters a bearer token cannot carry (allowed: A-Z a-z 0-9 - . _ ~ + / and trailing =)')
      digest = hash('sha256', rest)
      entry = name === undefined ? { token: rest } : { name, token: rest }
    }
    if (name !== undefined) {
      const first = names.get(name)
      if (first !== undefined) throw bad(`duplicate client name (first on ${unit} ${first}); names are unique`)
      names.set(name, position)
    }
    const same = digests.get(digest)
    if (same !== undefined) {
      if (name === undefined && !same.named) continue
      throw bad(`the same token as ${unit} ${same.position}, under another client name or none; a token belongs to one client`)
    }
    digests.set(digest, { position, named: name !== undefined })
    entries.push(entry)
  }
  if (entries.length === 0) throw new ConfigError(`${source}: at least one bearer token is required; the service never runs open`)
  return entries
}

/**
 * CORS_ORIGINS: comma-separated origins, each `scheme://host[:port]` (http or https) written as a
 * browser serialises it in Origin (lower-case host, no default port, no path, not even "/"), since
 * they are compared exactly; or `*` alone, for any origin. No patterns: `*` inside an origin is
 * refused rather than taken as a wildcard. Blank means off.
 */
export function parseCorsOrigins (text: string): string[] | undefined {
  const origins = [...new Set(text.split(',').map((origin) => origin.trim()).filter((origin) => origin !== ''))]
  if (origins.length === 0) return undefined
  if (origins.includes('*')) {
    if (origins.length > 1) throw new ConfigError('CORS_ORIGINS: * allows every origin: write it alone, or list origins without it')
    return ['*']
  }
  origins.forEach((origin, index) => {
    const problem = `CORS_ORIGINS: origin ${index + 1} (${origin}) is not scheme://host[:port]`
    if (origin.includes('*')) throw new ConfigError(`${problem}: patterns are not supported, list each origin, or write * alone for any`)
    let url: URL
    try {
      url = new URL(origin)
    } catch {
      throw new ConfigError(problem)
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${problem}: the scheme must be http or https`)
    // Origin headers are compared exactly, so the value must be what a browser sends.
    if (url.origin !== origin) throw new ConfigError(`${problem} as a browser sends it: write ${url.origin} (no path, no trailing /, lower-case host, no default port)`)
  })
  return origins
}

export function readTokensFile (path: string): TokenEntry[] {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new ConfigError(`API_TOKENS_FILE: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
  return parseTokens(text, 'API_TOKENS_FILE')
}

/** The subset of JSON Schema that Env uses: integers and strings with bounds, unions of literals. */
interface EnvSchema {
  type?: 'integer' | 'string'
  default?: unknown
  minimum?: number
  maximum?: number
  minLength?: number
  const?: string
  anyOf?: EnvSchema[]
}

/** One variable's problems, worded as Ajv words them (what env-schema printed before: same messages). */
function envErrors (schema: EnvSchema, value: unknown): string[] {
  if (schema.anyOf !== undefined) {
    const branches = schema.anyOf.map((branch) => envErrors(branch, value))
    return branches.some((errors) => errors.length === 0) ? [] : [...branches.flat(), 'must match a schema in anyOf']
  }
  if (schema.type === 'integer') {
    if (typeof value !== 'number' || !Number.isInteger(value)) return ['must be integer']
    if (schema.maximum !== undefined && !(value <= schema.maximum)) return [`must be <= ${schema.maximum}`]
    if (schema.minimum !== undefined && !(value >= schema.minimum)) return [`must be >= ${schema.minimum}`]
    return []
  }
  if (typeof value !== 'string') return ['must be string']
  const errors: string[] = []
  if (schema.minLength !== undefined && [...value].length < schema.minLength) errors.push(`must NOT have fewer than ${schema.minLength} characters`)
  if (schema.const !== undefined && value !== schema.const) errors.push('must be equal to constant')
  return errors
}

/**
 * Env's variables, numbers converted and defaults filled in, as env-schema (Ajv with coerceTypes,
 * useDefaults, allErrors) did, without Ajv's instance and schema compilation at start (about 50 ms).
 * Throws ConfigError listing every bad variable, e.g. "PORT must be integer, BODY_LIMIT must be >= 64".
 */
function readEnv (env: NodeJS.ProcessEnv): Env {
  const values: Record<string, unknown> = {}
  const problems: string[] = []
  for (const [name, schema] of Object.entries(Env.properties) as [string, EnvSchema][]) {
    let value: unknown = env[name]
    if (value === undefined) {
      if (schema.default === undefined) continue
      value = schema.default
    } else if (schema.type === 'integer' && typeof value === 'string' && value !== '' && Number.isInteger(Number(value))) {
      // Ajv's coercion: a string that is a number (Number(), so surrounding blanks and 0x10 too).
      value = Number(value)
    }
    values[name] = value
    for (const error of envErrors(schema, value)) problems.push(`${name} ${error}`)
  }
  if (problems.length > 0) throw new ConfigError(problems.join(', '))
  return values as Env
}

/** Reads and checks the configuration once, at start. Throws ConfigError naming the variable. */
/** What loadConfig reads of the system besides the environment; tests pass their own. */
export interface System {
  /** The process's memory limit (a container's), undefined when there is none. */
  memoryLimit: () => number | undefined
}

export function loadConfig (env: NodeJS.ProcessEnv, system: System = { memoryLimit }): Config {
  const limit = system.memoryLimit()
  // An empty value turns these off, so that a variable the Docker image sets can be unset with `-e NAME=`.
  const values = readEnv({
    ...env,
    METRICS_PORT: env.METRICS_PORT?.trim() === '' ? undefined : env.METRICS_PORT,
    OTEL_EXPORTER_OTLP_ENDPOINT: env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() === '' ? undefined : env.OTEL_EXPORTER_OTLP_ENDPOINT
  })
  const fromList = values.API_TOKENS !== undefined && values.API_TOKENS.trim() !== ''
  if (fromList && values.API_TOKENS_FILE !== undefined) {
    throw new ConfigError('API_TOKENS and API_TOKENS_FILE are both set: set only one')
  }
  let tokens: TokenEntry[]
  if (values.API_TOKENS_FILE !== undefined) tokens = readTokensFile(values.API_TOKENS_FILE)
  else if (fromList) tokens = parseTokens(values.API_TOKENS ?? '', 'API_TOKENS')
  else throw new ConfigError('API_TOKENS: set API_TOKENS (comma-separated) or API_TOKENS_FILE; the service never runs open')

  if (values.HEADERS_TIMEOUT_MS > values.REQUEST_TIMEOUT_MS) {
    throw new ConfigError(`HEADERS_TIMEOUT_MS (${values.HEADERS_TIMEOUT_MS}) must not be larger than REQUEST_TIMEOUT_MS (${values.REQUEST_TIMEOUT_MS})`)
  }
  if (values.REDIS_URL !== undefined && !/^rediss?:\/\//.test(values.REDIS_URL)) {
    throw new ConfigError('REDIS_URL: must start with redis:// or rediss://')
  }
  const corsOrigins = values.CORS_ORIGINS === undefined ? undefined : parseCorsOrigins(values.CORS_ORIGINS)
  if (values.METRICS_PORT !== undefined && values.METRICS_PORT !== 0 && values.METRICS_PORT === values.PORT) {
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
    memoryStoreMaxRssBytes: values.MEMORY_STORE_MAX_RSS_BYTES ??
      (limit === undefined ? 0 : Math.floor(limit * MEMORY_STORE_SHARE_OF_LIMIT)),
    shutdownTimeoutMs: values.SHUTDOWN_TIMEOUT_MS,
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
      ...(values.MAX_HEAP_USED_BYTES === undefined ? {} : { maxHeapUsedBytes: values.MAX_HEAP_USED_BYTES }),
      maxRssBytes: values.MAX_RSS_BYTES
    },
    ...(values.RATE_LIMIT_PER_MINUTE === 0
      ? {}
      : { rateLimit: { perMinute: values.RATE_LIMIT_PER_MINUTE, ...(values.REDIS_URL === undefined ? {} : { redisUrl: values.REDIS_URL }) } }),
    ...(corsOrigins === undefined ? {} : { corsOrigins }),
    ...(values.METRICS_PORT === undefined ? {} : { metrics: { port: values.METRICS_PORT, host: values.METRICS_HOST ?? values.HOST } }),
    ...(otlpEndpoint === undefined ? {} : { otlpEndpoint })
  }
}

function isHttpUrl (text: string): boolean {
  try {
    const url = new URL(text)
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== ''
  } catch {
    return false
  }
}
