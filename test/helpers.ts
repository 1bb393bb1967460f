import { readFileSync } from 'node:fs'
import type { Server } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import pino from 'pino'
import { onTestFinished } from 'vitest'
import { buildApp, type App } from '../src/app.js'
import { loadConfig, type Config } from '../src/config/load-config.js'
import type { TokenEntry } from '../src/config/tokens.js'
import { createTokenSet, type TokenSet } from '../src/plugins/auth.js'
import { createMemoryPlantRepository } from '../src/plants/memory-plant-repository.js'
import type { PlantRepository } from '../src/plants/plant-repository.js'
import type { Metrics } from '../src/observability/metrics.js'

export const TOKEN = 'test-token-0123456789'
export const AUTH = { authorization: `Bearer ${TOKEN}` }
export const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' }
/** What loadConfig reads from an environment with only a token, outside a container (no memory limit). */
export const DEFAULT_CONFIG = loadConfig({ API_TOKENS: TOKEN }, { memoryLimit: () => undefined })

export interface TestAppOptions {
  repository?: PlantRepository
  /** Settings beyond DEFAULT_CONFIG, under the variables' names (BODY_LIMIT, timeouts, overload, rate limit, CORS). */
  config?: Partial<Config>
  /** Accepted tokens (plain strings, or entries with a client name); default [TOKEN]. */
  tokens?: (string | TokenEntry)[]
  /** A token set of the test's own (to replace its tokens mid-test); overrides tokens. */
  tokenSet?: TokenSet
  /** Capacity of the default memory store. */
  maxPlants?: number
  /** Collect log lines (JSON strings) here instead of discarding them. */
  logLines?: string[]
  /** Count requests and store calls here (createMetrics()); default: no metrics. */
  metrics?: Metrics
}

/** An app with a known token and a fresh memory store, closed when the test ends. */
export async function buildTestApp (options: TestAppOptions = {}): Promise<App> {
  const lines = options.logLines
  const logger = pino({ level: lines === undefined ? 'silent' : 'trace' }, new Writable({
    write (chunk, _encoding, done) {
      lines?.push(...String(chunk).split('\n').filter((line) => line !== ''))
      done()
    }
  }))
  const app = await buildApp({
    // No shedding on event-loop delay unless a test asks for it (overload.test.ts): a loaded machine
    // (a shared CI runner, a mutation run) delays the loop by hundreds of ms, and a 503 there is the
    // machine's, not the code's. The heap check stays.
    config: { ...DEFAULT_CONFIG, MAX_EVENT_LOOP_DELAY_MS: 0, ...options.config },
    tokens: options.tokenSet ?? createTokenSet(options.tokens ?? [TOKEN]),
    repository: options.repository ?? createMemoryPlantRepository({ maxPlants: options.maxPlants ?? 100000 }),
    logger,
    metrics: options.metrics
  })
  onTestFinished(() => app.close())
  return app
}

/**
 * POSTs to /plants through inject: a string or a Buffer as it is (so tests can send what JSON.stringify cannot
 * write, like 2^53 + 1, or bytes that are not UTF-8), anything else as JSON.
 */
export function postPlant (app: App, payload: string | Buffer | object, headers: Record<string, string> = JSON_AUTH) {
  return app.inject({
    method: 'POST',
    url: '/plants',
    headers,
    payload: typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload)
  })
}

/**
 * The value of one sample in a Prometheus text exposition, or undefined when absent. `labels` must
 * be all of the sample's labels (any order).
 */
export function sampleValue (text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`).sort().join(',')
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null || match[1] !== name) continue
    const found = (match[2] ?? '').split(/,(?=[a-zA-Z_][a-zA-Z0-9_]*=")/).filter((part) => part !== '').sort().join(',')
    if (found === wanted) return Number(match[3])
  }
  return undefined
}

/**
 * POSTs to /plants of a running server with `token` (null: no Authorization header): a string or a Buffer as it
 * is, anything else as JSON.
 */
export function postOverHttp (url: string, token: string | null, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/plants`, {
    method: 'POST',
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body)
  })
}

/** A TCP port free on 127.0.0.1 a moment ago (for a server that cannot be told port 0). */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Polls until `condition` holds (or throws after `timeoutMs`): waits on a state, never a fixed sleep. */
export async function until (condition: () => boolean | Promise<boolean>, timeoutMs = 10000, what = 'condition', everyMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await condition()) {
    if (Date.now() > deadline) throw new Error(`${what} did not hold within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/** Listens on a free port of 127.0.0.1, an app (its hooks ready) or a bare server, and returns the port. */
export async function listening (target: App | Server): Promise<number> {
  if ('inject' in target) await target.listen({ port: 0, host: '127.0.0.1' })
  else await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve))
  return (('inject' in target ? target.server : target).address() as AddressInfo).port
}

/** The image's ENV (the Dockerfile's runtime stage), quotes taken off: what its container starts with. */
export function imageEnv (): Record<string, string> {
  const dockerfile = readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8').replace(/\\\n/g, ' ')
  const env: Record<string, string> = {}
  for (const line of dockerfile.slice(dockerfile.lastIndexOf('FROM ')).split('\n').filter((text) => text.startsWith('ENV '))) {
    for (const [, name, value] of line.slice(4).matchAll(/([A-Z_][A-Z0-9_]*)=("[^"]*"|\S*)/g)) {
      env[name as string] = (value as string).replace(/^"(.*)"$/, '$1')
    }
  }
  return env
}
