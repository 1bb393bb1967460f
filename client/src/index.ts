import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'

/** A safe-integer number, or a bigint for any int64: a number past 2^53 may already be rounded. */
export type PlantId = number | bigint

export interface NewPlant {
  id: PlantId
  name: string
  tag?: string
}

export interface Plant {
  name: string
  tag?: string
}

export type PlantStoreErrorKind = 'conflict' | 'invalid' | 'unauthorized' | 'full' | 'unavailable' | 'misconfigured' | 'unexpected'

/** Each option left undefined takes its default; a negative, NaN or past 2^31-1 value is a RangeError. */
export interface RetryOptions {
  /** Attempts in all, the first one included; 1 turns retries off. Default 10. */
  maxAttempts?: number | undefined
  /** Counted from the call of `create`: no wait or attempt goes past it. Default 30000. */
  deadlineMs?: number | undefined
  /** Full-jitter backoff: before retry n, a random wait up to min(maxDelayMs, baseDelayMs * 2^(n-1)). */
  baseDelayMs?: number | undefined
  maxDelayMs?: number | undefined
  /** A longer Retry-After ends the retries (the error carries it) rather than coming back early. Default 20000. */
  maxRetryAfterMs?: number | undefined
  /** Retry tokens shared by the client's requests: a retry costs 5, 10 after a timeout or a network error. */
  budget?: number | undefined
}

export interface RetryEvent {
  /** The plant as given to `create`. */
  plant: NewPlant
  /** The attempt that failed, from 1. */
  attempt: number
  failure: PlantStoreError
  /** How long the client waits before the next attempt, in ms. */
  waitMs: number
}

export interface SuccessEvent {
  plant: NewPlant
  /** Requests sent, the one answered 200 included. */
  attempts: number
  /** The X-Request-Id every attempt of this create carried. */
  requestId: string
}

export interface PlantClientOptions {
  /** An http: or https: URL, without credentials; `/plants` goes under its path, and its query is kept. */
  baseUrl: string | URL
  /** Sent as `Authorization: Bearer <token>`: visible ASCII only. */
  token: string
  /** The longest one attempt may take, reply body included. Default 10000. */
  timeoutMs?: number | undefined
  /** `false`: one attempt only. */
  retry?: RetryOptions | false | undefined
  /** Node's global fetch unless given (a proxy agent, a test's recorder). */
  fetch?: typeof fetch | undefined
  /** Called before each wait for a retry; what it throws rejects the create. */
  onRetry?: ((event: RetryEvent) => void) | undefined
  /** Called when a create resolves; what it throws rejects the create. */
  onSuccess?: ((event: SuccessEvent) => void) | undefined
}

export interface PlantClient {
  /** The stored plant on a 200, whether stored now or found stored; else a PlantStoreError. */
  create (plant: NewPlant, options?: { signal?: AbortSignal | undefined }): Promise<Plant>
}

interface Failure {
  kind: PlantStoreErrorKind
  message: string
  status?: number
  error?: number
  retryAfterMs?: number | undefined
  requestId?: string
  cause?: unknown
  /** A timeout that the deadline, not timeoutMs, made short. */
  cut?: boolean
}

/** Why a create failed: the reply's status and Error record, or no reply (`status` undefined). */
export class PlantStoreError extends Error {
  override readonly name = 'PlantStoreError'
  readonly kind: PlantStoreErrorKind
  /** The HTTP status; undefined when no reply came (a timeout or a network error). */
  readonly status: number | undefined
  /** The Error record's `error` (the service sets it to the status); undefined without a record. */
  readonly error: number | undefined
  /** The last reply's Retry-After in ms, if it carried one: when to try again after retries gave up. */
  readonly retryAfterMs: number | undefined
  /** Requests sent; 0 when the plant was refused before any. */
  readonly attempts: number
  /** The reply's X-Request-Id, else the one the create sent; undefined when nothing was sent. */
  readonly requestId: string | undefined

  constructor (failure: Failure, attempts: number) {
    super(failure.message, failure.cause === undefined ? undefined : { cause: failure.cause })
    this.kind = failure.kind
    this.status = failure.status
    this.error = failure.error
    this.retryAfterMs = failure.retryAfterMs
    this.attempts = attempts
    this.requestId = failure.requestId
  }
}

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const DEFAULTS = { maxAttempts: 10, deadlineMs: 30000, baseDelayMs: 100, maxDelayMs: 5000, maxRetryAfterMs: 20000, budget: 500 }
/** The longest timer Node keeps: a longer one fires after 1 ms. */
const LONGEST = 2 ** 31 - 1
/** The least time left before the deadline that a retry needs to be worth starting (or timeoutMs, if shorter). */
const MIN_WINDOW_MS = 100
// undici RetryHandler's codes, with DNS's temporary failure and undici's timeouts. A name that does not
// resolve (ENOTFOUND), a TLS failure or a request fetch refuses to build is the caller's to fix.
const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ENETDOWN', 'ENETUNREACH', 'EHOSTDOWN', 'EHOSTUNREACH', 'EPIPE',
  'ETIMEDOUT', 'EAI_AGAIN', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])
// The AWS SDKs' standard retry mode: what a retry takes from the budget, what a success gives back.
const RETRY_COST = 5
const NO_REPLY_RETRY_COST = 10
const SUCCESS_REFUND = 1

const KINDS: Record<number, PlantStoreErrorKind> = {
  400: 'invalid',
  413: 'invalid',
  415: 'invalid',
  401: 'unauthorized',
  409: 'conflict',
  507: 'full',
  408: 'unavailable',
  429: 'unavailable',
  503: 'unavailable',
  // Outcomes unknown (a proxy's 502 and 504 above all): the replay contract makes them safe to send again.
  500: 'unavailable',
  502: 'unavailable',
  504: 'unavailable'
}

/** An option's value, or its default when undefined; a RangeError that names it when it is no time or count a timer keeps. */
function option (name: string, value: unknown, fallback: number, least = 0): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !(value >= least && value <= LONGEST)) {
    throw new RangeError(`${name} must be a number from ${least} to ${LONGEST}, or undefined for ${fallback}; got ${String(value)}`)
  }
  return value
}

/** Why fetch failed: undici's TypeError says it on its cause, another fetch on the error itself. */
function reasonOf (error: unknown): { code?: unknown, message?: unknown } {
  return isRecord(error) && isRecord(error.cause) ? error.cause : isRecord(error) ? error : { message: error }
}

/** What the service's 400 would say of this plant (src/validation.ts words it), or undefined when it is valid. */
export function problemOf (plant: unknown): string | undefined {
  if (typeof plant !== 'object' || plant === null || Array.isArray(plant)) return 'body must be a JSON object'
  const { id, name, tag } = plant as Record<string, unknown>
  // JSON.stringify leaves out an undefined property: the service would find it missing.
  if (id === undefined) return 'body/id is required'
  if (name === undefined) return 'body/name is required'
  if (Number.isInteger(id) && !Number.isSafeInteger(id)) {
    return `body/id ${id} is not a safe integer, so it may be rounded: pass the id as a bigint`
  }
  if (!(typeof id === 'bigint' ? id >= INT64_MIN && id <= INT64_MAX : Number.isSafeInteger(id))) {
    return `body/id must be an integer between ${INT64_MIN} and ${INT64_MAX}`
  }
  for (const [key, text] of [['name', name], ['tag', tag]] as const) {
    if (text === undefined) continue
    if (typeof text !== 'string') return `body/${key} must be a string`
    if (text.includes('\u0000') || !text.isWellFormed()) return `body/${key} must not contain U+0000 or unpaired surrogates`
  }
  return undefined
}

/** The JSON text of a valid plant, written by hand so that a bigint id keeps every digit. */
function bodyOf ({ id, name, tag }: NewPlant): string {
  return `{"id":${id},"name":${JSON.stringify(name)}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`}}`
}

/** Retry-After in ms: delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function retryAfterMs (value: string | null, now = Date.now()): number | undefined {
  const text = String(value)
  if (/^\s*\d+\s*$/.test(text)) return Number(text) * 1000
  // Date.parse reads much that is no date ('-1' is a year): an HTTP date has its day and month in letters.
  const date = /[a-z]/i.test(text) ? Date.parse(text) : Number.NaN
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null

/** The JSON value of a text, undefined when it is no JSON. */
function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {}
}

/** The failure a non-200 reply stands for, with the Error record's words when it carries one. */
function failureOf (response: Response, text: string): Failure {
  const body = parseJson(text)
  const record = isRecord(body) && typeof body.error === 'number' && typeof body.message === 'string'
  return {
    kind: KINDS[response.status] ?? 'unexpected',
    status: response.status,
    message: record ? body.message as string : `${response.status} ${response.statusText}`.trim(),
    ...(record && { error: body.error as number }),
    ...(response.headers.has('x-request-id') && { requestId: response.headers.get('x-request-id') as string }),
    retryAfterMs: retryAfterMs(response.headers.get('retry-after'))
  }
}

/** `/plants` under the base URL's path, its query kept. The URL is not echoed in an error: it may hold a password. */
function plantsUrl (baseUrl: string | URL): URL {
  const url = URL.canParse(String(baseUrl)) ? new URL(baseUrl) : undefined
  if (url === undefined || !['http:', 'https:'].includes(url.protocol)) throw new RangeError('baseUrl must be an http: or https: URL')
  if (url.username !== '' || url.password !== '') throw new RangeError('baseUrl must hold no credentials: the token is the credential')
  url.pathname = url.pathname.replace(/\/?$/, '/plants')
  return url
}

export function createPlantClient (options: PlantClientOptions): PlantClient {
  const url = plantsUrl(options.baseUrl)
  // Only visible ASCII reaches the service intact; the token is not echoed.
  if (typeof options.token !== 'string' || !/^[\x21-\x7e]+$/.test(options.token)) {
    throw new RangeError('token must be visible ASCII, with no space, line break or byte order mark (trim what a file gave)')
  }
  const timeoutMs = option('timeoutMs', options.timeoutMs, 10000, 1)
  const given: RetryOptions = options.retry === false ? { maxAttempts: 1 } : options.retry ?? {}
  const retry = {
    maxAttempts: option('retry.maxAttempts', given.maxAttempts, DEFAULTS.maxAttempts, 1),
    deadlineMs: option('retry.deadlineMs', given.deadlineMs, DEFAULTS.deadlineMs, 1),
    baseDelayMs: option('retry.baseDelayMs', given.baseDelayMs, DEFAULTS.baseDelayMs),
    maxDelayMs: option('retry.maxDelayMs', given.maxDelayMs, DEFAULTS.maxDelayMs),
    maxRetryAfterMs: option('retry.maxRetryAfterMs', given.maxRetryAfterMs, DEFAULTS.maxRetryAfterMs),
    budget: option('retry.budget', given.budget, DEFAULTS.budget)
  }
  const { fetch: send = fetch, onRetry, onSuccess } = options
  const authorization = `Bearer ${options.token}`
  const window = Math.min(timeoutMs, MIN_WINDOW_MS)
  let tokens = retry.budget

  /** One request: the Plant, or the failure it ended in. Only the caller's abort throws. */
  async function attempt (body: string, requestId: string, deadline: number, signal: AbortSignal | undefined): Promise<{ plant: Plant } | Failure> {
    const limit = Math.max(1, Math.ceil(Math.min(timeoutMs, deadline - performance.now())))
    const timeout = AbortSignal.timeout(limit)
    const headers = { authorization, 'content-type': 'application/json', accept: 'application/json', 'x-request-id': requestId }
    let response: Response
    let text: string
    try {
      response = await send(url, { method: 'POST', headers, body, signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]) })
      text = await response.text()
    } catch (cause) {
      if (signal?.aborted) throw signal.reason
      if (timeout.aborted) return { kind: 'unavailable', message: `no reply within ${limit} ms`, cause, cut: limit < timeoutMs }
      const { code, message } = reasonOf(cause)
      if (NETWORK_CODES.has(code as string)) return { kind: 'unavailable', message: 'the connection to the plant store failed', cause }
      return { kind: 'misconfigured', message: `the request cannot be sent: ${String(code ?? message)}`, cause }
    }
    if (response.status !== 200) return failureOf(response, text)
    const plant = parseJson(text)
    if (isRecord(plant) && typeof plant.name === 'string') {
      return { plant: { name: plant.name, ...(typeof plant.tag === 'string' && { tag: plant.tag }) } }
    }
    return { kind: 'unexpected', status: 200, message: 'the reply to a 200 is not a Plant' }
  }

  /** The wait before the next attempt, or undefined when retrying is over. */
  function waitAfter (failure: Failure, now: number, deadline: number, retried: number): number | undefined {
    if (failure.kind !== 'unavailable' || retried + 1 >= retry.maxAttempts) return undefined
    if ((failure.retryAfterMs ?? 0) > retry.maxRetryAfterMs) return undefined
    const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** retried)
    // Jitter on top of Retry-After too: clients told the same second must not all come back in the same millisecond.
    const wait = (failure.retryAfterMs ?? 0) + Math.random() * ceiling
    // An attempt with too little time left would only turn the reply in hand into a timeout.
    return now + wait + window <= deadline ? wait : undefined
  }

  async function create (plant: NewPlant, { signal }: { signal?: AbortSignal | undefined } = {}): Promise<Plant> {
    const problem = problemOf(plant)
    if (problem !== undefined) throw new PlantStoreError({ kind: 'invalid', message: problem }, 0)
    const body = bodyOf(plant)
    const deadline = performance.now() + retry.deadlineMs
    // One id for every attempt, so that the service's log ties them together; a UUID is the printable ASCII it keeps.
    const requestId = randomUUID()
    let lastCost = 0
    let replied: Failure | undefined
    for (let attempts = 1; ; attempts++) {
      const outcome = await attempt(body, requestId, deadline, signal)
      if ('plant' in outcome) {
        tokens = Math.min(retry.budget, tokens + (lastCost || SUCCESS_REFUND))
        onSuccess?.({ plant, attempts, requestId })
        return outcome.plant
      }
      // A timeout the deadline cut short says less than the last reply (its status, its Retry-After).
      const failure = new PlantStoreError({ requestId, ...(outcome.cut === true ? replied ?? outcome : outcome) }, attempts)
      if (outcome.status !== undefined) replied = outcome
      const cost = outcome.status === undefined ? NO_REPLY_RETRY_COST : RETRY_COST
      const wait = waitAfter(outcome, performance.now(), deadline, attempts - 1)
      if (wait === undefined || tokens < cost) throw failure
      tokens -= cost
      lastCost = cost
      onRetry?.({ plant, attempt: attempts, failure, waitMs: wait })
      // The wait ends early only when the caller aborts.
      await sleep(wait, undefined, { signal }).catch(() => {})
      signal?.throwIfAborted()
    }
  }

  return { create }
}
