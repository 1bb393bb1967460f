import { readFileSync } from 'node:fs'
import { Type, type Static } from '@sinclair/typebox'
import envSchema from 'env-schema'

/** The environment the service reads; names and defaults are the README's configuration table. */
const Env = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  LOG_LEVEL: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)), { default: 'info' }),
  API_TOKENS: Type.Optional(Type.String()),
  API_TOKENS_FILE: Type.Optional(Type.String({ minLength: 1 })),
  DATABASE_URL: Type.String({ default: 'memory:' }),
  BODY_LIMIT: Type.Integer({ minimum: 64, maximum: 1048576, default: 16384 }),
  MAX_PLANTS: Type.Integer({ minimum: 1, maximum: 16000000, default: 1000000 }),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600000, default: 8000 })
})
type Env = Static<typeof Env>

export interface Config {
  port: number
  host: string
  logLevel: string
  /** Accepted bearer tokens; never empty. */
  tokens: string[]
  /** Where the tokens came from, when a file: the service can read it again (rotation). */
  tokensFile?: string
  databaseUrl: string
  bodyLimit: number
  maxPlants: number
  shutdownTimeoutMs: number
}

/** A bad setting: its message is the one line the process prints before it exits 1. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** RFC 6750 b64token: what can follow "Bearer " in a header. */
const TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/

/** Splits and checks a token list; `source` names the variable in the error. */
export function parseTokens (text: string, separator: string | RegExp, source: string): string[] {
  const tokens = [...new Set(text.split(separator).map((token) => token.trim()).filter((token) => token !== ''))]
  if (tokens.length === 0) throw new ConfigError(`${source}: at least one bearer token is required; the service never runs open`)
  const bad = tokens.findIndex((token) => !TOKEN.test(token))
  if (bad !== -1) throw new ConfigError(`${source}: token ${bad + 1} has characters a bearer token cannot carry (allowed: A-Z a-z 0-9 - . _ ~ + / and trailing =)`)
  return tokens
}

export function readTokensFile (path: string): string[] {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new ConfigError(`API_TOKENS_FILE: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
  return parseTokens(text, /\r?\n/, 'API_TOKENS_FILE')
}

/** Reads and checks the configuration once, at start. Throws ConfigError naming the variable. */
export function loadConfig (env: NodeJS.ProcessEnv): Config {
  let values: Env
  try {
    values = envSchema<Env>({ schema: Env, data: { ...env }, env: false, dotenv: false })
  } catch (error) {
    throw new ConfigError((error as Error).message.replace(/^env\//, '').replace(/, env\//g, ', '))
  }
  const fromList = values.API_TOKENS !== undefined && values.API_TOKENS.trim() !== ''
  if (fromList && values.API_TOKENS_FILE !== undefined) {
    throw new ConfigError('API_TOKENS and API_TOKENS_FILE are both set: set only one')
  }
  let tokens: string[]
  if (values.API_TOKENS_FILE !== undefined) tokens = readTokensFile(values.API_TOKENS_FILE)
  else if (fromList) tokens = parseTokens(values.API_TOKENS ?? '', ',', 'API_TOKENS')
  else throw new ConfigError('API_TOKENS: set API_TOKENS (comma-separated) or API_TOKENS_FILE; the service never runs open')

  return {
    port: values.PORT,
    host: values.HOST,
    logLevel: values.LOG_LEVEL,
    tokens,
    ...(values.API_TOKENS_FILE === undefined ? {} : { tokensFile: values.API_TOKENS_FILE }),
    databaseUrl: values.DATABASE_URL === '' ? 'memory:' : values.DATABASE_URL,
    bodyLimit: values.BODY_LIMIT,
    maxPlants: values.MAX_PLANTS,
    shutdownTimeoutMs: values.SHUTDOWN_TIMEOUT_MS
  }
}
