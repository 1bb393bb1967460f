import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from './config-error.js'

// Not Type.Integer: TypeBox converts an integer with parseInt, which reads "1.5" as 1 instead of refusing it.
const integer = (minimum: number, maximum: number, defaultValue: number) =>
  Type.Number({ multipleOf: 1, minimum, maximum, default: defaultValue })
const optionalInteger = (minimum: number, maximum = Number.MAX_SAFE_INTEGER) =>
  Type.Optional(Type.Number({ multipleOf: 1, minimum, maximum }))
const milliseconds = (defaultValue: number) => integer(100, 600000, defaultValue)
const optionalString = (pattern = '') => Type.Optional(Type.String({ pattern }))

/** The environment the service reads, one row a variable (docs/configuration.md), each also a field of Config. */
export const Env = Type.Object({
  PORT: integer(0, 65535, 3000),
  HOST: Type.String({ default: '127.0.0.1' }),
  LOG_LEVEL: Type.String({ pattern: '^(fatal|error|warn|info|debug|trace|silent)$', default: 'info' }),
  LOG_BUFFER_MAX_BYTES: optionalInteger(65536, 1073741824),
  API_TOKENS: optionalString(),
  API_TOKENS_FILE: optionalString(),
  DATABASE_URL: Type.String({ pattern: '^(memory:$|sqlite:|postgres(ql)?://)', default: 'memory:' }),
  // PostgreSQL only.
  DATABASE_POOL_MAX: integer(1, 1000, 10),
  DATABASE_STATEMENT_TIMEOUT_MS: milliseconds(5000),
  BODY_LIMIT: integer(64, 1048576, 16384),
  // Below V8's most Map entries (2^24).
  MAX_PLANTS: optionalInteger(1, 16000000),
  SHUTDOWN_TIMEOUT_MS: milliseconds(8000),
  SHUTDOWN_DELAY_MS: integer(0, 600000, 0),
  HEADERS_TIMEOUT_MS: milliseconds(10000),
  REQUEST_TIMEOUT_MS: milliseconds(15000),
  CONNECTION_TIMEOUT_MS: milliseconds(30000),
  KEEP_ALIVE_TIMEOUT_MS: milliseconds(72000),
  MAX_HEADER_BYTES: integer(1024, 65536, 16384),
  MAX_EVENT_LOOP_DELAY_MS: integer(0, 60000, 200),
  MAX_HEAP_USED_BYTES: optionalInteger(0),
  MAX_RSS_BYTES: integer(0, Number.MAX_SAFE_INTEGER, 0),
  MAX_RSS_ANON_BYTES: optionalInteger(0),
  RATE_LIMIT_PER_MINUTE: integer(0, 100000000, 0),
  REDIS_URL: optionalString('^rediss?://'),
  CORS_ORIGINS: optionalString(),
  METRICS_PORT: optionalInteger(0, 65535),
  METRICS_HOST: optionalString(),
  // The OTLP/HTTP receiver, e.g. http://127.0.0.1:4318.
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalString('^https?://[^/]')
})
export type Env = Static<typeof Env>

/** The variables Env names, trimmed, with defaults and numbers converted; one ConfigError lists every bad one. */
export function readEnv (env: NodeJS.ProcessEnv): Env {
  // Blank is unset, so that a variable the Docker image sets can be unset with `-e NAME=`.
  const given = Object.entries(env).map(([name, value]) => [name, value?.trim()]).filter(([, value]) => value)
  const values = Value.Clean(Env, Value.Convert(Env, Value.Default(Env, Object.fromEntries(given))))
  if (Value.Check(Env, values)) return values
  const problems = [...Value.Errors(Env, values)].map((error) => `${error.path.slice(1)}: ${error.message}`)
  throw new ConfigError(problems.join(', '))
}
