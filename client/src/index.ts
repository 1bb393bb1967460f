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

export type PlantStoreErrorKind = 'conflict' | 'invalid' | 'unauthorized' | 'full' | 'unavailable' | 'unexpected'

export interface RetryOptions {
  /** Attempts in all, the first one included; 1 turns retries off. Default 10. */
  maxAttempts?: number
  /** Counted from the call of `create`: no wait or attempt goes past it. Default 30000. */
  deadlineMs?: number
  /** Full-jitter backoff: before retry n, a random wait up to min(maxDelayMs, baseDelayMs * 2^(n-1)). */
  baseDelayMs?: number
  maxDelayMs?: number
  /** A longer Retry-After ends the retries (the error carries it) rather than coming back early. Default 20000. */
  maxRetryAfterMs?: number
  /** Retry tokens shared by the client's requests: a retry costs 5, 10 after a timeout or a network error. */
  budget?: number
}

export interface PlantClientOptions {
  /** Where the service answers; `/plants` is resolved under it. */
  baseUrl: string | URL
  token: string
  /** The longest one attempt may take, reply body included. Default 10000. */
  timeoutMs?: number
  /** `false`: one attempt only. */
  retry?: RetryOptions | false
  /** Node's global fetch unless given (a proxy agent, a test's recorder). */
  fetch?: typeof fetch
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
  cause?: unknown
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

  constructor (failure: Failure, attempts: number) {
    super(failure.message, failure.cause === undefined ? undefined : { cause: failure.cause })
    this.kind = failure.kind
    this.status = failure.status
    this.error = failure.error
    this.retryAfterMs = failure.retryAfterMs
    this.attempts = attempts
  }
}

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const DEFAULTS: Required<RetryOptions> = {
  maxAttempts: 10, deadlineMs: 30000, baseDelayMs: 100, maxDelayMs: 5000, maxRetryAfterMs: 20000, budget: 500
}
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
  503: 'unavailable'
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

/** The JSON value of a text, undefined when it is no JSON. */
function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {}
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null

/** The failure a non-200 reply stands for, with the Error record's words when it carries one. */
function failureOf (response: Response, text: string): Failure {
  const body = parseJson(text)
  const record = isRecord(body) && typeof body.error === 'number' && typeof body.message === 'string'
  return {
    kind: KINDS[response.status] ?? 'unexpected',
    status: response.status,
    message: record ? body.message as string : `${response.status} ${response.statusText}`.trim(),
    ...(record && { error: body.error as number }),
    retryAfterMs: retryAfterMs(response.headers.get('retry-after'))
  }
}

export function createPlantClient (options: PlantClientOptions): PlantClient {
  const url = new URL('plants', String(options.baseUrl).replace(/\/?$/, '/'))
  const { timeoutMs = 10000, fetch: send = fetch } = options
  const retry = { ...DEFAULTS, ...(options.retry === false ? { maxAttempts: 1 } : options.retry) }
  const headers = { authorization: `Bearer ${options.token}`, 'content-type': 'application/json', accept: 'application/json' }
  let tokens = retry.budget

  /** One request: the Plant, or the failure it ended in. Only the caller's abort throws. */
  async function attempt (body: string, deadline: number, signal: AbortSignal | undefined): Promise<{ plant: Plant } | Failure> {
    const limit = Math.max(1, Math.ceil(Math.min(timeoutMs, deadline - performance.now())))
    const timeout = AbortSignal.timeout(limit)
    let response: Response
    let text: string
    try {
      response = await send(url, {
        method: 'POST', headers, body, signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout])
      })
      text = await response.text()
    } catch (cause) {
      if (signal?.aborted) throw signal.reason
      const message = timeout.aborted ? `no reply within ${limit} ms` : 'the connection to the plant store failed'
      return { kind: 'unavailable', message, cause }
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
    const jitter = Math.random() * ceiling
    const wait = (failure.retryAfterMs ?? 0) + jitter
    return now + wait < deadline ? wait : undefined
  }

  async function create (plant: NewPlant, { signal }: { signal?: AbortSignal | undefined } = {}): Promise<Plant> {
    const problem = problemOf(plant)
    if (problem !== undefined) throw new PlantStoreError({ kind: 'invalid', status: 400, error: 400, message: problem }, 0)
    const body = bodyOf(plant)
    const deadline = performance.now() + retry.deadlineMs
    let lastCost = 0
    for (let attempts = 1; ; attempts++) {
      const outcome = await attempt(body, deadline, signal)
      if ('plant' in outcome) {
        tokens = Math.min(retry.budget, tokens + (lastCost || SUCCESS_REFUND))
        return outcome.plant
      }
      const cost = outcome.status === undefined ? NO_REPLY_RETRY_COST : RETRY_COST
      const wait = waitAfter(outcome, performance.now(), deadline, attempts - 1)
      if (wait === undefined || tokens < cost) throw new PlantStoreError(outcome, attempts)
      tokens -= cost
      lastCost = cost
      // The wait ends early only when the caller aborts.
      await sleep(wait, undefined, { signal }).catch(() => {})
      signal?.throwIfAborted()
    }
  }

  return { create }
}
