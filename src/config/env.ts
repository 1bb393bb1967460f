import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { Value, ValueErrorType, type ValueError } from '@sinclair/typebox/value'
import { ConfigError } from '../lib/config-error.js'

// Whole numbers are read as TypeBox numbers with multipleOf 1, not Type.Integer: TypeBox converts an
// integer with parseInt, which would read "1.5" as 1 where a whole number was meant; a number is read
// whole (parseFloat) and 1.5 refused. Infinity and NaN are never numbers (TypeBox's default policy).
const whole = (minimum: number, maximum: number, defaultValue: number) => Type.Number({ multipleOf: 1, minimum, maximum, default: defaultValue })
/** A byte count has no bound of its own but exactness: at most 2^53 - 1. */
const optionalWhole = (minimum: number, maximum = Number.MAX_SAFE_INTEGER) => Type.Optional(Type.Number({ multipleOf: 1, minimum, maximum }))
/** Milliseconds between a tenth of a second and ten minutes. */
const milliseconds = (defaultValue: number) => whole(100, 600000, defaultValue)
const oneOf = <T extends string>(values: readonly T[], defaultValue: T) => Type.Union(values.map((value) => Type.Literal(value)), { default: defaultValue })
const text = Type.String({ minLength: 1 })

/**
 * The environment the service reads: one row a variable, with its default (docs/configuration.md).
 * A new setting is a row here and a field in Config (config.ts).
 */
export const Env = Type.Object({
  PORT: whole(0, 65535, 3000),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
  // Log lines waiting for a slow reader; the default comes from a container's limit.
  LOG_BUFFER_MAX_BYTES: optionalWhole(65536, 1073741824),
  API_TOKENS: Type.Optional(Type.String()),
  API_TOKENS_FILE: Type.Optional(text),
  DATABASE_URL: Type.String({ default: 'memory:' }),
  // PostgreSQL only: connections per process, and the longest one statement may run (SET LOCAL).
  DATABASE_POOL_MAX: whole(1, 1000, 10),
  DATABASE_STATEMENT_TIMEOUT_MS: milliseconds(5000),
  // Off by default: named prepared statements break behind a transaction-mode pooler.
  DATABASE_PREPARED_STATEMENTS: oneOf(['off', 'on'], 'off'),
  BODY_LIMIT: whole(64, 1048576, 16384),
  MAX_PLANTS: whole(1, 16000000, 1000000),
  // Memory store: full (507) when its plants hold this many bytes; the default comes from a container's limit.
  MEMORY_STORE_MAX_BYTES: optionalWhole(0),
  SHUTDOWN_TIMEOUT_MS: milliseconds(8000),
  // On SIGTERM: not ready, yet serving, this long before the drain (balancers catch up); 0: drain at once.
  SHUTDOWN_DELAY_MS: whole(0, 600000, 0),
  // Slow and broken clients (see HttpLimits).
  HEADERS_TIMEOUT_MS: milliseconds(10000),
  REQUEST_TIMEOUT_MS: milliseconds(15000),
  CONNECTION_TIMEOUT_MS: milliseconds(30000),
  KEEP_ALIVE_TIMEOUT_MS: milliseconds(72000),
  MAX_HEADER_BYTES: whole(1024, 65536, 16384),
  // Overload (see OverloadLimits); 0 turns a check off.
  MAX_EVENT_LOOP_DELAY_MS: whole(0, 60000, 200),
  MAX_HEAP_USED_BYTES: optionalWhole(0),
  MAX_RSS_BYTES: whole(0, Number.MAX_SAFE_INTEGER, 0),
  // Resident anonymous memory; the default comes from a container's limit.
  MAX_RSS_ANON_BYTES: optionalWhole(0),
  // Per-token rate limit: off unless set.
  RATE_LIMIT_PER_MINUTE: whole(0, 100000000, 0),
  REDIS_URL: Type.Optional(text),
  // Cross-origin browser access: off unless set.
  CORS_ORIGINS: Type.Optional(Type.String()),
  // Observability: no metrics listener and no trace export unless set (empty counts as unset).
  METRICS_PORT: optionalWhole(0, 65535),
  METRICS_HOST: Type.Optional(text),
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(text)
})
export type Env = Static<typeof Env>

/**
 * A TypeBox error as one short phrase after the variable's name (the wording env-schema's Ajv used).
 * Each case reads the keyword its error type comes from. Every value is a string (the environment's),
 * so the only other errors are a number's: not a number, or not whole.
 */
function phrase (error: ValueError): string {
  const schema = error.schema as TSchema & { minimum: number, maximum: number, minLength: number, anyOf: { const: string }[] }
  switch (error.type) {
    case ValueErrorType.NumberMaximum: return `must be <= ${schema.maximum}`
    case ValueErrorType.NumberMinimum: return `must be >= ${schema.minimum}`
    case ValueErrorType.StringMinLength: return `must NOT have fewer than ${schema.minLength} characters`
    case ValueErrorType.Union: return `must be one of ${schema.anyOf.map((branch) => branch.const).join(', ')}`
    default: return 'must be integer'
  }
}

/**
 * The variables Env names, defaults filled in and numbers converted by TypeBox's Value. Throws one
 * ConfigError listing every bad variable, e.g. "PORT must be integer, BODY_LIMIT must be >= 64".
 */
export function readEnv (env: NodeJS.ProcessEnv): Env {
  // An unset variable is undefined here, which Value.Default fills like an absent one.
  const given = Object.fromEntries(Object.keys(Env.properties).map((name) => [name, env[name]]))
  const values = Value.Convert(Env, Value.Default(Env, given))
  if (Value.Check(Env, values)) return values
  const problems = new Map<string, string>()
  for (const error of Value.Errors(Env, values)) {
    // A variable's last error is the one told: TypeBox checks a number's bounds before multipleOf, so
    // "1.5" for BODY_LIMIT is told it is not whole, not that it is below 64, as Ajv did (a test holds it).
    const name = error.path.slice(1)
    problems.set(name, `${name} ${phrase(error)}`)
  }
  throw new ConfigError([...problems.values()].join(', '))
}
