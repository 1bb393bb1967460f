import { Type, type Static, type TLiteral, type TSchema } from '@sinclair/typebox'
import { Value, ValueErrorType, type ValueError } from '@sinclair/typebox/value'
import { ConfigError } from '../lib/config-error.js'

// Not Type.Integer: TypeBox converts an integer with parseInt, which reads "1.5" as 1 instead of refusing it.
const whole = (minimum: number, maximum: number, defaultValue: number) =>
  Type.Number({ multipleOf: 1, minimum, maximum, default: defaultValue })
const optionalWhole = (minimum: number, maximum = Number.MAX_SAFE_INTEGER) =>
  Type.Optional(Type.Number({ multipleOf: 1, minimum, maximum }))
const milliseconds = (defaultValue: number) => whole(100, 600000, defaultValue)
const oneOf = <T extends string>(values: readonly T[], defaultValue: T) =>
  Type.Union(values.map((value) => Type.Literal(value)), { default: defaultValue })
const text = Type.String({ minLength: 1 })

/** The environment the service reads, one row a variable (docs/configuration.md), each also a field of Config. */
export const Env = Type.Object({
  PORT: whole(0, 65535, 3000),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
  LOG_BUFFER_MAX_BYTES: optionalWhole(65536, 1073741824),
  API_TOKENS: Type.Optional(Type.String()),
  API_TOKENS_FILE: Type.Optional(text),
  DATABASE_URL: Type.String({ default: 'memory:' }),
  // PostgreSQL only.
  DATABASE_POOL_MAX: whole(1, 1000, 10),
  DATABASE_STATEMENT_TIMEOUT_MS: milliseconds(5000),
  DATABASE_PREPARED_STATEMENTS: oneOf(['off', 'on'], 'off'),
  BODY_LIMIT: whole(64, 1048576, 16384),
  MAX_PLANTS: whole(1, 16000000, 1000000),
  MEMORY_STORE_MAX_BYTES: optionalWhole(0),
  SHUTDOWN_TIMEOUT_MS: milliseconds(8000),
  SHUTDOWN_DELAY_MS: whole(0, 600000, 0),
  HEADERS_TIMEOUT_MS: milliseconds(10000),
  REQUEST_TIMEOUT_MS: milliseconds(15000),
  CONNECTION_TIMEOUT_MS: milliseconds(30000),
  KEEP_ALIVE_TIMEOUT_MS: milliseconds(72000),
  MAX_HEADER_BYTES: whole(1024, 65536, 16384),
  MAX_EVENT_LOOP_DELAY_MS: whole(0, 60000, 200),
  MAX_HEAP_USED_BYTES: optionalWhole(0),
  MAX_RSS_BYTES: whole(0, Number.MAX_SAFE_INTEGER, 0),
  MAX_RSS_ANON_BYTES: optionalWhole(0),
  RATE_LIMIT_PER_MINUTE: whole(0, 100000000, 0),
  REDIS_URL: Type.Optional(text),
  CORS_ORIGINS: Type.Optional(Type.String()),
  METRICS_PORT: optionalWhole(0, 65535),
  METRICS_HOST: Type.Optional(text),
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(text)
})
export type Env = Static<typeof Env>

/** A TypeBox error as a phrase after the variable's name; a string can only fail as a number otherwise. */
function phrase (error: ValueError): string {
  const schema = error.schema as TSchema & { minimum: number, maximum: number, minLength: number, anyOf: TLiteral[] }
  switch (error.type) {
    case ValueErrorType.NumberMaximum: return `must be <= ${schema.maximum}`
    case ValueErrorType.NumberMinimum: return `must be >= ${schema.minimum}`
    case ValueErrorType.StringMinLength: return `must NOT have fewer than ${schema.minLength} characters`
    case ValueErrorType.Union: return `must be one of ${schema.anyOf.map((branch) => branch.const).join(', ')}`
    default: return 'must be integer'
  }
}

/** The variables Env names, with defaults and numbers converted; one ConfigError lists every bad one. */
export function readEnv (env: NodeJS.ProcessEnv): Env {
  // A copy, which Value.Default fills in. Blank is unset for these, so that a variable the Docker image
  // sets can be unset with `-e NAME=`.
  const given = { ...env }
  for (const name of ['API_TOKENS', 'DATABASE_URL', 'METRICS_PORT', 'OTEL_EXPORTER_OTLP_ENDPOINT']) {
    if (given[name]?.trim() === '') given[name] = undefined
  }
  const values = Value.Convert(Env, Value.Default(Env, given))
  if (Value.Check(Env, values)) return values
  // A variable's last error is told (a Map keeps the first position and the last value): TypeBox checks
  // bounds before multipleOf, and "1.5" is not whole before it is small.
  const problems = new Map([...Value.Errors(Env, values)]
    .map((error): [string, string] => [error.path, `${error.path.slice(1)} ${phrase(error)}`]))
  throw new ConfigError([...problems.values()].join(', '))
}
