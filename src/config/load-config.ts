import { getHeapStatistics } from 'node:v8'
import { readEnv } from './env.js'
import { readTokens, readTokensFile } from './tokens.js'
import { ConfigError } from './config-error.js'
import { memoryLimit } from './memory-limit.js'

/** Each variable of docs/configuration.md under its own name, with the tokens and CORS origins it gives. */
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
  if (values.API_TOKENS !== undefined && values.API_TOKENS_FILE !== undefined) {
    throw new ConfigError('API_TOKENS and API_TOKENS_FILE are both set: set only one')
  }
  if (values.HEADERS_TIMEOUT_MS > values.REQUEST_TIMEOUT_MS) {
    throw new ConfigError('HEADERS_TIMEOUT_MS must not be larger than REQUEST_TIMEOUT_MS')
  }
  const plantsHeld = Math.floor(limit / LIMIT_BYTES_PER_PLANT)
  if ((values.MAX_PLANTS ?? 0) > plantsHeld) {
    throw new ConfigError(`MAX_PLANTS (${values.MAX_PLANTS}) is more than the memory limit ` +
      `(${Math.round(limit / 2 ** 20)} MiB) holds: at most ${plantsHeld}, one plant per 8 KiB of it`)
  }
  if (values.METRICS_PORT !== 0 && values.METRICS_PORT === values.PORT) {
    throw new ConfigError('METRICS_PORT must differ from PORT: metrics are never served on the API port')
  }
  const { entries: tokens, problem } = values.API_TOKENS_FILE === undefined
    ? readTokens(values.API_TOKENS ?? '', 'API_TOKENS')
    : readTokensFile(values.API_TOKENS_FILE)
  if (problem !== undefined) throw problem

  return {
    ...values,
    // A 32nd of a memory limit, from a pipe's buffer (64 KiB) to 2 MiB: held lines cost the heap 2-4 times their size.
    LOG_BUFFER_MAX_BYTES: values.LOG_BUFFER_MAX_BYTES ?? Math.min(2 ** 21, Math.max(2 ** 16, Math.floor(limit / 32))),
    MAX_PLANTS: values.MAX_PLANTS ?? Math.min(1000000, plantsHeld),
    // V8 sizes its heap from the machine, not the container: under a limit, shed at half of it in heap.
    MAX_HEAP_USED_BYTES: values.MAX_HEAP_USED_BYTES ?? Math.min(defaultMaxHeapUsedBytes(), Math.floor(limit / 2)),
    // 85 % of a limit in resident memory; the rest is the process under load.
    MAX_RSS_ANON_BYTES: values.MAX_RSS_ANON_BYTES ?? (limit === Infinity ? 0 : Math.floor(limit * 0.85)),
    METRICS_HOST: values.METRICS_HOST ?? values.HOST,
    tokens,
    corsOrigins: parseCorsOrigins(values.CORS_ORIGINS ?? '')
  }
}

/**
 * CORS_ORIGINS: comma-separated origins exactly as a browser sends Origin (they are compared exactly),
 * or `*` alone for any; none is CORS off. No patterns: `*` inside an origin is refused, not taken as a wildcard.
 */
function parseCorsOrigins (text: string): string[] | undefined {
  const origins = [...new Set(text.split(',').map((origin) => origin.trim()).filter((origin) => origin !== ''))]
  if (origins.join() === '*') return origins
  // No ^ needed: a text that is its own origin (the URL check) starts with its scheme.
  const bad = origins.findIndex((origin) => !/https?:\/\/[^*]+$/.test(origin) || URL.parse(origin)?.origin !== origin)
  if (bad === -1) return origins.length > 0 ? origins : undefined
  throw new ConfigError(`CORS_ORIGINS: origin ${bad + 1} (${origins[bad]}) is not http(s)://host[:port] as a browser ` +
    'sends it (lower-case host, no path, no default port), nor * alone for any origin')
}
