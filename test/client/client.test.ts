import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer as createHttpsServer } from 'node:https'
import { createServer as createTcpServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inspect } from 'node:util'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { createPlantClient, PlantStoreError, problemOf, retryAfterMs, type PlantClientOptions } from '../../client/src/index.js'
import { reply, startStub, type Answer } from './stub-server.js'

// The client's decisions against a local stub server that answers what each test needs: what it sends,
// which replies and failures of fetch it retries and when, its budget, its deadline, its options, what it
// refuses before sending, and what it shows of its attempts.

const TOKEN = 'stub-token'
const OVERLOADED = { error: 503, message: 'the service is overloaded, retry later' }
const PLANT = { name: 'Monstera', tag: 'tropical' }
/** Retries without waiting, unless a test asks for waits. */
const FAST = { baseDelayMs: 1, maxDelayMs: 1 }

async function clientOf (answer: Answer, options: Partial<PlantClientOptions> = {}) {
  const stub = await startStub(answer)
  return { ...stub, client: createPlantClient({ baseUrl: stub.url, token: TOKEN, retry: FAST, ...options }) }
}

/** The PlantStoreError a promise rejects with (fails the test if it resolves or rejects with anything else). */
async function failure (promise: Promise<unknown>): Promise<PlantStoreError> {
  const error = await promise.then(() => { throw new Error('resolved, expected a PlantStoreError') }, (error: unknown) => error)
  expect(error).toBeInstanceOf(PlantStoreError)
  return error as PlantStoreError
}

/** The code undici put on a failure's cause. */
const reasonCode = (cause: unknown): unknown => (cause as { cause?: { code?: unknown } }).cause?.code

/** A port nothing listens on: one the system just gave and took back. */
async function closedPort (): Promise<number> {
  const server = createTcpServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

const gaps = (times: number[]): number[] => times.slice(1).map((time, i) => time - (times[i] as number))

describe('plant-store-client: what it sends and what it resolves', () => {
  it('POSTs the plant as JSON with the bearer token to <baseUrl>/plants and resolves the Plant of a 200', async () => {
    const { client, received } = await clientOf((_n, _request, response) => reply(200, { ...PLANT, extra: 1 })(response))
    await expect(client.create({ id: 10, ...PLANT })).resolves.toEqual(PLANT)
    expect(received).toHaveLength(1)
    expect(received[0]).toMatchObject({ method: 'POST', url: '/plants', body: '{"id":10,"name":"Monstera","tag":"tropical"}' })
    expect(received[0]?.headers).toMatchObject({ authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json' })
  })

  it('resolves /plants under a base URL with a path, with or without its trailing slash, and keeps its query', async () => {
    const stub = await startStub((_n, _request, response) => reply(200, { name: 'Fern' })(response))
    for (const baseUrl of [`${stub.url}/api`, `${stub.url}/api/`, new URL(`${stub.url}/api`), `${stub.url}/api?tenant=a#top`, `${stub.url}`]) {
      // Strictly: a Plant without a tag has no tag property at all.
      await expect(createPlantClient({ baseUrl, token: TOKEN }).create({ id: 1, name: 'Fern' })).resolves.toStrictEqual({ name: 'Fern' })
    }
    expect(stub.received.map((request) => request.url)).toEqual(['/api/plants', '/api/plants', '/api/plants', '/api/plants?tenant=a', '/plants'])
  })

  it('writes ids exactly over all of int64, a bigint or a safe-integer number, and no property but id, name and tag', async () => {
    const { client, received } = await clientOf((_n, _request, response) => reply(200, { name: 'x' })(response))
    await client.create({ id: 9223372036854775807n, name: 'x' })
    await client.create({ id: -9223372036854775808n, name: 'x', tag: 't' })
    await client.create({ id: 9007199254740993n, name: 'x' })
    await client.create({ id: Number.MIN_SAFE_INTEGER, name: 'x' })
    await client.create({ id: 0, name: 'x', extra: 'ignored' } as { id: number, name: string })
    expect(received.map((request) => request.body)).toEqual([
      '{"id":9223372036854775807,"name":"x"}',
      '{"id":-9223372036854775808,"name":"x","tag":"t"}',
      '{"id":9007199254740993,"name":"x"}',
      '{"id":-9007199254740991,"name":"x"}',
      '{"id":0,"name":"x"}'
    ])
  })

  it('refuses a plant the service would refuse, before any request, with the words of its 400', async () => {
    const { client, received } = await clientOf((_n, _request, response) => reply(200, PLANT)(response))
    const range = 'body/id must be an integer between -9223372036854775808 and 9223372036854775807'
    const cases: Array<[unknown, string]> = [
      [null, 'body must be a JSON object'],
      ['fern', 'body must be a JSON object'],
      [7, 'body must be a JSON object'],
      [[1], 'body must be a JSON object'],
      [{ name: 'x' }, 'body/id is required'],
      [{ id: 1 }, 'body/name is required'],
      [{ id: undefined, name: undefined }, 'body/id is required'],
      [{ id: 1.5, name: 'x' }, range],
      [{ id: '1', name: 'x' }, range],
      [{ id: Number.NaN, name: 'x' }, range],
      [{ id: 2n ** 63n, name: 'x' }, range],
      [{ id: -(2n ** 63n) - 1n, name: 'x' }, range],
      [{ id: 1, name: 7 }, 'body/name must be a string'],
      [{ id: 1, name: 'x', tag: null }, 'body/tag must be a string'],
      [{ id: 1, name: 'a\u0000b' }, 'body/name must not contain U+0000 or unpaired surrogates'],
      [{ id: 1, name: 'x', tag: '\uD800' }, 'body/tag must not contain U+0000 or unpaired surrogates'],
      [{ id: 2 ** 60, name: 'x' }, 'body/id 1152921504606847000 is not a safe integer, so it may be rounded: pass the id as a bigint']
    ]
    for (const [plant, message] of cases) {
      const error = await failure(client.create(plant as never))
      // No reply came: no status, no Error record, no request id.
      expect({ kind: error.kind, status: error.status, error: error.error, message: error.message, attempts: error.attempts, requestId: error.requestId },
        inspect(plant)).toEqual({ kind: 'invalid', status: undefined, error: undefined, message, attempts: 0, requestId: undefined })
      expect(problemOf(plant)).toBe(message)
    }
    expect(received).toEqual([])
    expect(problemOf({ id: 1, name: '', tag: '\uD83C\uDF3F' })).toBeUndefined()
  })
})

describe('plant-store-client: which failures it retries', () => {
  it('retries 503, 429, 408, 500, 502 and 504 with the identical body until the 200', async () => {
    const statuses = [503, 429, 408, 500, 502, 504]
    const { client, received } = await clientOf((n, _request, response) => {
      const status = statuses[n]
      ;(status === undefined ? reply(200, PLANT) : reply(status, { error: status, message: `status ${status}` }))(response)
    })
    await expect(client.create({ id: 9007199254740993n, ...PLANT })).resolves.toEqual(PLANT)
    expect(received).toHaveLength(7)
    expect(new Set(received.map((request) => request.body))).toEqual(new Set(['{"id":9007199254740993,"name":"Monstera","tag":"tropical"}']))
  })

  it('never retries another status, and names the failure by its kind with the Error record\'s words', async () => {
    const kinds: Array<[number, string]> = [[400, 'invalid'], [413, 'invalid'], [415, 'invalid'], [401, 'unauthorized'], [409, 'conflict'],
      [507, 'full'], [404, 'unexpected'], [501, 'unexpected'], [505, 'unexpected'], [201, 'unexpected']]
    for (const [status, kind] of kinds) {
      const { client, received } = await clientOf((_n, _request, response) => reply(status, { error: status, message: `m${status}` })(response))
      const error = await failure(client.create({ id: 1, name: 'x' }))
      expect({ status: error.status, error: error.error, message: error.message, kind: error.kind, attempts: error.attempts })
        .toEqual({ status, error: status, message: `m${status}`, kind, attempts: 1 })
      expect(error.name).toBe('PlantStoreError')
      // A reply is no cause: there is nothing beneath it.
      expect('cause' in error).toBe(false)
      expect(received).toHaveLength(1)
    }
  })

  it('keeps the status line as the message when a reply has no Error record', async () => {
    const bodies = ['<h1>502</h1>', 'null', '{"message":"no error field"}', '{"error":502}', '{"error":"502","message":"a string error"}']
    const { client } = await clientOf((n, _request, response) => response.writeHead(502, 'Bad Gateway', { 'content-type': 'text/html' }).end(bodies[n]),
      { retry: false })
    for (const body of bodies) {
      const error = await failure(client.create({ id: 1, name: 'x' }))
      expect({ status: error.status, error: error.error, message: error.message, kind: error.kind }, body)
        .toEqual({ status: 502, error: undefined, message: '502 Bad Gateway', kind: 'unavailable' })
    }
  })

  it('words a status line without a reason phrase as the status alone', async () => {
    const { client } = await clientOf((_n, _request, response) => response.writeHead(599, '').end())
    expect((await failure(client.create({ id: 1, name: 'x' }))).message).toBe('599')
  })

  it('calls a 200 that is not a Plant unexpected, and does not retry it', async () => {
    const bodies = ['not json', 'null', '{"tag":"no name"}', '{"name":7}']
    const { client, received } = await clientOf((n, _request, response) => reply(200, bodies[n])(response))
    for (const body of bodies) {
      const error = await failure(client.create({ id: 1, name: 'x' }))
      expect({ status: error.status, kind: error.kind, message: error.message }, body)
        .toEqual({ status: 200, kind: 'unexpected', message: 'the reply to a 200 is not a Plant' })
    }
    expect(received).toHaveLength(bodies.length)
  })

  it('retries a connection reset and ends unavailable, with no status and the cause, once maxAttempts are spent', async () => {
    const { client, received } = await clientOf((_n, _request, response) => response.socket?.destroy(), { retry: { ...FAST, maxAttempts: 4 } })
    const error = await failure(client.create({ id: 1, name: 'x' }))
    expect({ kind: error.kind, status: error.status, error: error.error, attempts: error.attempts, message: error.message })
      .toEqual({ kind: 'unavailable', status: undefined, error: undefined, attempts: 4, message: 'the connection to the plant store failed' })
    expect(error.cause).toBeInstanceOf(Error)
    expect(received).toHaveLength(4)
  })

  it('ends an attempt that gets no reply within timeoutMs, and retries it', async () => {
    const { client, received } = await clientOf(() => {}, { timeoutMs: 200, retry: { ...FAST, maxAttempts: 3 } })
    const started = performance.now()
    const error = await failure(client.create({ id: 1, name: 'x' }))
    expect({ kind: error.kind, status: error.status, attempts: error.attempts, message: error.message })
      .toEqual({ kind: 'unavailable', status: undefined, attempts: 3, message: 'no reply within 200 ms' })
    expect(received).toHaveLength(3)
    expect(performance.now() - started).toBeGreaterThanOrEqual(3 * 200 - 5)
  })
})

describe('plant-store-client: when it retries', () => {
  it('reads Retry-After as seconds or as an HTTP date, and ignores what is neither', () => {
    const now = Date.parse('2026-11-27T10:00:00Z')
    expect(retryAfterMs('3', now)).toBe(3000)
    expect(retryAfterMs(' 0 ', now)).toBe(0)
    expect(retryAfterMs('Fri, 27 Nov 2026 10:00:05 GMT', now)).toBe(5000)
    expect(retryAfterMs('Fri, 27 Nov 2026 09:59:00 GMT', now)).toBe(0)
    expect(retryAfterMs(null, now)).toBeUndefined()
    expect(retryAfterMs('soon', now)).toBeUndefined()
    expect(retryAfterMs('-1', now)).toBeUndefined()
    expect(retryAfterMs('1.5', now)).toBeUndefined()
  })

  it('comes back no sooner than Retry-After in seconds (one at the cap is still waited), with a jitter of at most the backoff on top', async () => {
    const { client, received } = await clientOf((n, _request, response) =>
      (n === 0 ? reply(503, OVERLOADED, { 'retry-after': '1' }) : reply(200, PLANT))(response), { retry: { baseDelayMs: 50, maxRetryAfterMs: 1000 } })
    await client.create({ id: 1, ...PLANT })
    const [gap] = gaps(received.map((request) => request.at))
    expect(gap).toBeGreaterThanOrEqual(1000)
    expect(gap).toBeLessThan(1500)
  })

  it('comes back no sooner than Retry-After as an HTTP date', async () => {
    let date = 0
    const { client, received } = await clientOf((n, _request, response) => {
      // Two seconds ahead, so that the date's whole-second precision still leaves more than a second to wait.
      if (n === 0) date = Math.ceil(Date.now() / 1000) * 1000 + 2000
      ;(n === 0 ? reply(429, { error: 429, message: 'slow down' }, { 'retry-after': new Date(date).toUTCString() }) : reply(200, PLANT))(response)
    })
    await client.create({ id: 1, ...PLANT })
    expect(received).toHaveLength(2)
    expect(Date.now()).toBeGreaterThanOrEqual(date)
    expect(gaps(received.map((request) => request.at))[0]).toBeGreaterThan(1000)
  })

  it('gives up at once on a Retry-After beyond maxRetryAfterMs, rather than coming back early, and tells when to come back', async () => {
    const { client, received } = await clientOf(
      (_n, _request, response) => reply(429, { error: 429, message: 'retry in 42 s' }, { 'retry-after': '42' })(response),
      { retry: { maxRetryAfterMs: 10000, deadlineMs: 100000 } })
    const error = await failure(client.create({ id: 1, name: 'x' }))
    expect({ kind: error.kind, status: error.status, attempts: error.attempts, retryAfterMs: error.retryAfterMs, message: error.message })
      .toEqual({ kind: 'unavailable', status: 429, attempts: 1, retryAfterMs: 42000, message: 'retry in 42 s' })
    expect(received).toHaveLength(1)
  })

  it('without Retry-After, waits a full-jitter backoff: random × min(maxDelayMs, baseDelayMs × 2^(n-1))', async () => {
    const { client, received } = await clientOf((_n, _request, response) => reply(503, OVERLOADED)(response),
      { retry: { maxAttempts: 6, baseDelayMs: 200, maxDelayMs: 1000, deadlineMs: 60000 } })
    const ceilings = [200, 400, 800, 1000, 1000]
    const waitsWith = async (random: number): Promise<number[]> => {
      vi.spyOn(Math, 'random').mockReturnValue(random)
      try {
        const from = received.length
        expect((await failure(client.create({ id: 1, name: 'x' }))).attempts).toBe(6)
        return gaps(received.slice(from).map((request) => request.at))
      } finally {
        vi.restoreAllMocks()
      }
    }
    // The top of the draw waits the whole ceiling (timers fire late, never early), capped at maxDelayMs…
    const top = await waitsWith(0.999)
    top.forEach((wait, n) => expect(wait, `wait ${n + 1}`).toBeGreaterThanOrEqual(0.999 * (ceilings[n] as number)))
    expect(Math.max(...top)).toBeLessThan(1600)
    // …and the bottom hardly waits: the wait is the draw's share of the ceiling, not a fixed part of it.
    const bottom = await waitsWith(0)
    expect(bottom.reduce((sum, wait) => sum + wait, 0)).toBeLessThan(1700)
  })

  it('stops at the deadline: no wait or attempt goes past deadlineMs, and the last failure is the answer', async () => {
    const { client, received } = await clientOf((_n, _request, response) => reply(503, OVERLOADED, { 'retry-after': '1' })(response),
      { retry: { baseDelayMs: 1, deadlineMs: 2500 } })
    const started = performance.now()
    const error = await failure(client.create({ id: 1, name: 'x' }))
    expect(performance.now() - started).toBeLessThan(2500)
    expect({ kind: error.kind, status: error.status, message: error.message, retryAfterMs: error.retryAfterMs })
      .toEqual({ kind: 'unavailable', status: 503, message: OVERLOADED.message, retryAfterMs: 1000 })
    // Attempts at 0, 1 and 2 s; a third wait would end past 2.5 s.
    expect(received).toHaveLength(3)
  })

  it('ends an attempt at the deadline even when timeoutMs is longer', async () => {
    const { client } = await clientOf(() => {}, { timeoutMs: 10000, retry: { deadlineMs: 300 } })
    const started = performance.now()
    const error = await failure(client.create({ id: 1, name: 'x' }))
    expect(performance.now() - started).toBeLessThan(1000)
    expect(error.message).toBe('no reply within 300 ms')
  })
})

describe('plant-store-client: the retry budget shared by a client\'s requests', () => {
  it('spends 5 tokens a retry after a reply and 10 after no reply; when they run out, a failure is final at once', async () => {
    let failing = true
    const { client, received } = await clientOf((_n, _request, response) => (failing ? reply(503, OVERLOADED) : reply(200, PLANT))(response),
      { retry: { ...FAST, maxAttempts: 3, budget: 23 } })
    // 23 tokens: 2 retries (10), 2 retries (20), then one more (25 > 23: none), so 3 + 3 + 1 requests.
    const attempts = []
    for (let id = 0; id < 3; id++) attempts.push((await failure(client.create({ id, name: 'x' }))).attempts)
    expect(attempts).toEqual([3, 3, 1])
    expect(received).toHaveLength(7)
    // Creates that succeed at once give back 1 token each: two of them buy one retry of 5.
    failing = false
    await client.create({ id: 10, ...PLANT })
    await client.create({ id: 11, ...PLANT })
    failing = true
    expect((await failure(client.create({ id: 12, name: 'x' }))).attempts).toBe(2)
    expect((await failure(client.create({ id: 13, name: 'x' }))).attempts).toBe(1)
  })

  it('charges a retry after no reply twice as much', async () => {
    const { client } = await clientOf((_n, _request, response) => response.socket?.destroy(), { retry: { ...FAST, maxAttempts: 10, budget: 30 } })
    expect((await failure(client.create({ id: 1, name: 'x' }))).attempts).toBe(4)
    expect((await failure(client.create({ id: 2, name: 'x' }))).attempts).toBe(1)
  })

  it('gives a success after retries back what its last retry cost, up to the budget', async () => {
    const { client, received } = await clientOf((n, _request, response) => (n % 2 === 0 ? reply(503, OVERLOADED) : reply(200, PLANT))(response),
      { retry: { ...FAST, budget: 5 } })
    // Each create: a 503, one retry (5 tokens, the whole budget), a 200 that refunds them: it never runs dry.
    for (let id = 0; id < 5; id++) await expect(client.create({ id, ...PLANT })).resolves.toEqual(PLANT)
    expect(received).toHaveLength(10)
  })

  it('keeps one budget per client: another client retries while the first has none left', async () => {
    const stub = await startStub((_n, _request, response) => reply(503, OVERLOADED)(response))
    const options = { baseUrl: stub.url, token: TOKEN, retry: { ...FAST, maxAttempts: 2, budget: 5 } }
    const [first, second] = [createPlantClient(options), createPlantClient(options)]
    expect((await failure(first.create({ id: 1, name: 'x' }))).attempts).toBe(2)
    expect((await failure(first.create({ id: 1, name: 'x' }))).attempts).toBe(1)
    expect((await failure(second.create({ id: 1, name: 'x' }))).attempts).toBe(2)
  })

  it('retry: false sends one request', async () => {
    const { client, received } = await clientOf((_n, _request, response) => reply(503, OVERLOADED)(response), { retry: false })
    expect((await failure(client.create({ id: 1, name: 'x' }))).attempts).toBe(1)
    expect(received).toHaveLength(1)
  })
})

describe('plant-store-client: the caller\'s AbortSignal', () => {
  it('rejects with the signal\'s reason when it aborts during a wait, and sends nothing more', async () => {
    const { client, received } = await clientOf((_n, _request, response) => reply(503, OVERLOADED, { 'retry-after': '5' })(response))
    const controller = new AbortController()
    const reason = new Error('the caller gave up')
    const pending = client.create({ id: 1, name: 'x' }, { signal: controller.signal })
    await expect.poll(() => received.length).toBe(1)
    const aborted = performance.now()
    controller.abort(reason)
    await expect(pending).rejects.toBe(reason)
    // At once, not at the end of the 5 s wait.
    expect(performance.now() - aborted).toBeLessThan(1000)
    expect(received).toHaveLength(1)
  })

  it('rejects with the signal\'s reason when it aborts during a request, at once, with retries on or off', async () => {
    for (const retry of [{}, false] as const) {
      const { client } = await clientOf(() => {}, { retry })
      const started = performance.now()
      await expect(client.create({ id: 1, name: 'x' }, { signal: AbortSignal.timeout(100) })).rejects.toMatchObject({ name: 'TimeoutError' })
      // Not after timeoutMs (10 s): the request itself was aborted.
      expect(performance.now() - started).toBeLessThan(1000)
    }
  })

  it('sends nothing when the signal has already aborted', async () => {
    const { client, received } = await clientOf((_n, _request, response) => reply(200, PLANT)(response))
    const reason = new Error('already')
    await expect(client.create({ id: 1, name: 'x' }, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
    expect(received).toEqual([])
  })
})

describe('plant-store-client: its options', () => {
  it('gives each option left undefined its default: no RangeError from a timer, retries that wait, bounded attempts and budget', async () => {
    const { url, received } = await startStub((n, _request, response) => (n === 0 ? reply(503, OVERLOADED) : reply(200, PLANT))(response))
    const undefinedRetry = {
      maxAttempts: undefined, deadlineMs: undefined, baseDelayMs: undefined, maxDelayMs: undefined, maxRetryAfterMs: undefined, budget: undefined
    }
    const waits: number[] = []
    const client = createPlantClient({
      baseUrl: url, token: TOKEN, timeoutMs: undefined, fetch: undefined, retry: undefinedRetry, onRetry: ({ waitMs }) => { waits.push(waitMs) }
    })
    vi.spyOn(Math, 'random').mockReturnValue(0.5)
    try {
      await expect(client.create({ id: 1, ...PLANT })).resolves.toEqual(PLANT)
    } finally {
      vi.restoreAllMocks()
    }
    // Half of baseDelayMs's default (100): not NaN, which would never retry.
    expect(waits).toEqual([50])
    expect(received).toHaveLength(2)
    await expect(createPlantClient({ baseUrl: url, token: TOKEN, retry: undefined }).create({ id: 2, ...PLANT })).resolves.toEqual(PLANT)
  })

  it('bounds attempts at 10 and the budget at 500 tokens when maxAttempts and budget are undefined', async () => {
    const { client, received } = await clientOf((_n, _request, response) => reply(503, OVERLOADED)(response),
      { retry: { ...FAST, maxAttempts: undefined, budget: undefined } })
    // 11 creates of 9 retries each would take 99 × 5 = 495 tokens; the 12th has 5 left: one retry.
    const attempts = []
    for (let id = 0; id < 12; id++) attempts.push((await failure(client.create({ id, name: 'x' }))).attempts)
    expect(attempts).toEqual([...Array<number>(11).fill(10), 2])
    expect(received).toHaveLength(112)
  })

  it('throws a RangeError from createPlantClient that names an option which is negative, NaN, past 2^31-1 ms or not a number', () => {
    const invalid: unknown[] = [-1, Number.NaN, 2 ** 31, Number.POSITIVE_INFINITY, '100', null]
    const names = ['maxAttempts', 'deadlineMs', 'baseDelayMs', 'maxDelayMs', 'maxRetryAfterMs', 'budget']
    for (const value of invalid) {
      expect(() => createPlantClient({ baseUrl: 'http://127.0.0.1', token: TOKEN, timeoutMs: value as number }), String(value))
        .toThrow(new RangeError(`timeoutMs must be a number from 1 to 2147483647, or undefined for 10000; got ${String(value)}`))
      for (const name of names) {
        const create = () => createPlantClient({ baseUrl: 'http://127.0.0.1', token: TOKEN, retry: { [name]: value } })
        expect(create, `${name}: ${String(value)}`).toThrow(RangeError)
        expect(create, `${name}: ${String(value)}`).toThrow(`retry.${name} must be a number from `)
      }
    }
    // The largest timer Node keeps is valid; 0 is no count of attempts and no time to wait for a reply.
    expect(() => createPlantClient({ baseUrl: 'http://127.0.0.1', token: TOKEN, timeoutMs: 2 ** 31 - 1, retry: { deadlineMs: 2 ** 31 - 1 } })).not.toThrow()
    expect(() => createPlantClient({ baseUrl: 'http://127.0.0.1', token: TOKEN, retry: { budget: 0, baseDelayMs: 0 } })).not.toThrow()
    for (const name of ['timeoutMs', 'maxAttempts', 'deadlineMs']) {
      const options = name === 'timeoutMs' ? { timeoutMs: 0 } : { retry: { [name]: 0 } }
      expect(() => createPlantClient({ baseUrl: 'http://127.0.0.1', token: TOKEN, ...options }), name).toThrow(`${name} must be a number from 1 to`)
    }
  })

  it('throws a RangeError for a token a header cannot carry intact and a baseUrl fetch cannot use, echoing neither', () => {
    for (const token of ['\uFEFFsecret', 'secret\n', 'sec ret', '', 'sécret', undefined]) {
      expect(() => createPlantClient({ baseUrl: 'http://127.0.0.1', token: token as string }), JSON.stringify(token))
        .toThrow(new RangeError('token must be visible ASCII, with no space, line break or byte order mark (trim what a file gave)'))
    }
    for (const baseUrl of ['127.0.0.1:3000', 'ftp://127.0.0.1/', 'not a url', '']) {
      expect(() => createPlantClient({ baseUrl, token: TOKEN }), baseUrl).toThrow(new RangeError('baseUrl must be an http: or https: URL'))
    }
    expect(() => createPlantClient({ baseUrl: 'http://user:hunter2@127.0.0.1', token: TOKEN }))
      .toThrow(new RangeError('baseUrl must hold no credentials: the token is the credential'))
  })
})

describe('plant-store-client: failures of fetch that are not the network', () => {
  it('ends at once as misconfigured, spending no token, when fetch refuses the port, TLS fails or a header cannot be sent', async () => {
    const stub = await startStub((_n, _request, response) => reply(503, OVERLOADED)(response))
    const badHeader = new TypeError('Headers.append: "x" is an invalid header value.')
    const notFound = new TypeError('fetch failed', { cause: Object.assign(new Error('getaddrinfo ENOTFOUND plants.invalid'), { code: 'ENOTFOUND' }) })
    const thrown = (error: unknown): typeof fetch => async () => { throw error }
    // Each with the cause the error carries: what fetch threw.
    const cases: Array<[Partial<PlantClientOptions>, string, unknown]> = [
      // Port 6000 is one the Fetch standard blocks.
      [{ baseUrl: 'http://127.0.0.1:6000' }, 'the request cannot be sent: bad port', expect.objectContaining({ name: 'TypeError', message: 'fetch failed' })],
      // TLS spoken to a plain HTTP server.
      [{ baseUrl: stub.url.replace('http:', 'https:') }, 'the request cannot be sent: ERR_SSL_WRONG_VERSION_NUMBER',
        expect.objectContaining({ name: 'TypeError', message: 'fetch failed' })],
      [{ fetch: thrown(badHeader) }, 'the request cannot be sent: Headers.append: "x" is an invalid header value.', badHeader],
      [{ fetch: thrown(notFound) }, 'the request cannot be sent: ENOTFOUND', notFound],
      [{ fetch: thrown('a string') }, 'the request cannot be sent: a string', 'a string']
    ]
    for (const [options, message, cause] of cases) {
      const client = createPlantClient({ baseUrl: stub.url, token: TOKEN, retry: { ...FAST, budget: 5 }, ...options })
      for (let n = 0; n < 3; n++) {
        const error = await failure(client.create({ id: 1, name: 'x' }))
        expect({ kind: error.kind, status: error.status, attempts: error.attempts, message: error.message, cause: error.cause }, message)
          .toEqual({ kind: 'misconfigured', status: undefined, attempts: 1, message, cause })
      }
    }
    // None of these reached the stub; a client with only 5 tokens that met them still has its retry.
    expect(stub.received).toHaveLength(0)
    const client = createPlantClient({ baseUrl: stub.url, token: TOKEN, retry: { ...FAST, budget: 5, maxAttempts: 2 } })
    expect((await failure(client.create({ id: 1, name: 'x' }))).attempts).toBe(2)
  })

  it('ends at once as misconfigured on a certificate it does not trust (openssl makes one)', async (context) => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-client-tls-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-keyout', 'key.pem', '-out', 'cert.pem', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { cwd: dir })
    if (made.error !== undefined || made.status !== 0) context.skip(`openssl could not make a certificate: ${String(made.error ?? made.stderr)}`)
    const server = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) },
      (_request, response) => response.end('{}'))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    onTestFinished(() => new Promise<void>((resolve) => { server.close(() => resolve()) }))
    const client = createPlantClient({ baseUrl: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, token: TOKEN })
    const error = await failure(client.create({ id: 1, name: 'x' }))
    expect({ kind: error.kind, attempts: error.attempts, message: error.message })
      .toEqual({ kind: 'misconfigured', attempts: 1, message: 'the request cannot be sent: DEPTH_ZERO_SELF_SIGNED_CERT' })
  })

  it('retries the network\'s failures by their code: a refused connection, and a temporary DNS failure of another fetch', async () => {
    const stub = await startStub((_n, _request, response) => reply(200, PLANT)(response))
    const failed: string[] = []
    const tries = { eai: 0 }
    const eaiAgain: typeof fetch = async (input, init) => {
      if (tries.eai++ === 0) throw new TypeError('fetch failed', { cause: Object.assign(new Error('getaddrinfo EAI_AGAIN plants'), { code: 'EAI_AGAIN' }) })
      return fetch(input, init)
    }
    const onRetry: PlantClientOptions['onRetry'] = ({ failure }) => { failed.push(`${failure.kind}: ${failure.message} (${reasonCode(failure.cause)})`) }
    const retried = createPlantClient({ baseUrl: stub.url, token: TOKEN, retry: FAST, fetch: eaiAgain, onRetry })
    await expect(retried.create({ id: 1, ...PLANT })).resolves.toEqual(PLANT)
    const refused = createPlantClient({ baseUrl: `http://127.0.0.1:${await closedPort()}`, token: TOKEN, retry: { ...FAST, maxAttempts: 3 }, onRetry })
    expect((await failure(refused.create({ id: 1, name: 'x' }))).attempts).toBe(3)
    expect(failed).toEqual([
      'unavailable: the connection to the plant store failed (EAI_AGAIN)',
      'unavailable: the connection to the plant store failed (ECONNREFUSED)',
      'unavailable: the connection to the plant store failed (ECONNREFUSED)'
    ])
  })
})

describe('plant-store-client: outcomes unknown, jitter, budget and deadline together', () => {
  it('adds random × the backoff ceiling on top of a 502\'s Retry-After: exactly the wait it reports, and no sooner', async () => {
    const { client, received } = await clientOf((n, _request, response) =>
      (n % 2 === 0 ? reply(502, '<h1>502</h1>', { 'retry-after': '1' }) : reply(200, PLANT))(response),
    { retry: { baseDelayMs: 400, maxDelayMs: 1000 }, onRetry: ({ waitMs }) => { waits.push(waitMs) } })
    const waits: number[] = []
    for (const random of [0.75, 0]) {
      vi.spyOn(Math, 'random').mockReturnValue(random)
      try {
        await client.create({ id: 1, ...PLANT })
      } finally {
        vi.restoreAllMocks()
      }
    }
    expect(waits).toEqual([1000 + 0.75 * 400, 1000])
    const [late, , onTime] = gaps(received.map((request) => request.at))
    expect(late).toBeGreaterThanOrEqual(1300)
    expect(onTime).toBeGreaterThanOrEqual(1000)
    expect(onTime).toBeLessThan(1250)
  })

  it('shares the budget among concurrent creates: 10 tokens buy two retries in all, whichever creates take them', async () => {
    const { client, received } = await clientOf((_n, _request, response) => reply(504, { error: 504, message: 'gateway timeout' })(response),
      { retry: { ...FAST, maxAttempts: 3, budget: 10 } })
    const errors = await Promise.all([1, 2, 3, 4].map((id) => failure(client.create({ id, name: 'x' }))))
    expect(errors.map((error) => error.attempts).sort()).toEqual([1, 1, 2, 2])
    expect(errors.map((error) => [error.kind, error.status])).toEqual(Array(4).fill(['unavailable', 504]))
    expect(received).toHaveLength(6)
  })

  it('starts no attempt with less than min(timeoutMs, 100 ms) left: the 503 and its Retry-After are the answer', async () => {
    // Replies from a fetch of the test's own, at once: what is measured is the client's arithmetic, not this machine's
    // sockets, which a loaded machine makes late by more than the 79 ms to spare below.
    let sent = 0
    const fetch = async (): Promise<Response> => ++sent < 3
      ? new Response(JSON.stringify(OVERLOADED), { status: 503, headers: { 'retry-after': '1' } })
      : new Response(JSON.stringify(PLANT), { status: 200 })
    const client = createPlantClient({ baseUrl: 'http://127.0.0.1:1', token: TOKEN, fetch, retry: { ...FAST, deadlineMs: 1099 } })
    const started = performance.now()
    const error = await failure(client.create({ id: 1, name: 'x' }))
    expect({ status: error.status, retryAfterMs: error.retryAfterMs, attempts: error.attempts, message: error.message })
      .toEqual({ status: 503, retryAfterMs: 1000, attempts: 1, message: OVERLOADED.message })
    // Given up at once, not after a wait that would leave no time for a reply.
    expect(performance.now() - started).toBeLessThan(500)
    // With timeoutMs 20 the window is 20 ms: 1 s + at most 1 ms of jitter + 20 ms fits in 1099 ms, and 100 ms did not.
    const quick = createPlantClient({ baseUrl: 'http://127.0.0.1:1', token: TOKEN, fetch, timeoutMs: 20, retry: { ...FAST, deadlineMs: 1099 } })
    await expect(quick.create({ id: 1, ...PLANT })).resolves.toEqual(PLANT)
    expect(sent).toBe(3)
  })

  it('answers with the last reply, not the timeout the deadline cut short, when the last attempt gets no reply', async () => {
    const { client, received } = await clientOf((n, _request, response) => { if (n === 0) reply(503, OVERLOADED, { 'retry-after': '1' })(response) },
      { retry: { ...FAST, deadlineMs: 1400 } })
    const error = await failure(client.create({ id: 1, name: 'x' }))
    expect({ status: error.status, retryAfterMs: error.retryAfterMs, attempts: error.attempts, message: error.message, cause: error.cause })
      .toEqual({ status: 503, retryAfterMs: 1000, attempts: 2, message: OVERLOADED.message, cause: undefined })
    expect(received).toHaveLength(2)
  })
})

describe('plant-store-client: what it shows of its attempts', () => {
  const SERVICE_REQUEST_ID = /^[\x21-\x7e]{1,128}$/ // what src/plugins/http-edge.ts keeps of a caller's X-Request-Id

  it('calls onRetry with the attempt, the failure and the wait, and onSuccess with the attempts, and resolves the Plant alone', async () => {
    const statuses = [503, 502]
    const { client, received } = await clientOf((n, _request, response) => {
      const status = statuses[n]
      ;(status === undefined ? reply(200, PLANT) : reply(status, { error: status, message: `status ${status}` }))(response)
    }, {
      onRetry: ({ plant, attempt, failure, waitMs }) => { events.push(['retry', plant, attempt, failure.status, failure.attempts, failure.requestId, waitMs]) },
      onSuccess: ({ plant, attempts, requestId }) => { events.push(['success', plant, attempts, requestId]) }
    })
    const events: unknown[][] = []
    const plant = { id: 1, ...PLANT }
    vi.spyOn(Math, 'random').mockReturnValue(0.5)
    try {
      await expect(client.create(plant)).resolves.toStrictEqual(PLANT)
    } finally {
      vi.restoreAllMocks()
    }
    const ids = received.map((request) => request.headers['x-request-id'])
    const [id] = ids
    expect(events).toEqual([['retry', plant, 1, 503, 1, id, 0.5], ['retry', plant, 2, 502, 2, id, 0.5], ['success', plant, 3, id]])
    // One id for every attempt, a UUID: printable ASCII the service keeps as its request id.
    expect(ids).toEqual([id, id, id])
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(id).toMatch(SERVICE_REQUEST_ID)
    await client.create({ id: 2, ...PLANT })
    expect(received[3]?.headers['x-request-id']).not.toBe(id)
  })

  it('carries the reply\'s x-request-id on an error, or the id it sent when no reply came', async () => {
    const { client, received } = await clientOf((n, _request, response) => {
      if (n === 0) reply(409, { error: 409, message: 'taken' }, { 'x-request-id': 'from-the-proxy' })(response)
      else if (n === 1) reply(409, { error: 409, message: 'taken' })(response)
      else response.socket?.destroy()
    }, { retry: false })
    expect((await failure(client.create({ id: 1, name: 'x' }))).requestId).toBe('from-the-proxy')
    expect((await failure(client.create({ id: 1, name: 'x' }))).requestId).toBe(received[1]?.headers['x-request-id'])
    const reset = await failure(client.create({ id: 1, name: 'x' }))
    expect({ kind: reset.kind, status: reset.status, requestId: reset.requestId })
      .toEqual({ kind: 'unavailable', status: undefined, requestId: received[2]?.headers['x-request-id'] })
    expect(reset.requestId).toMatch(SERVICE_REQUEST_ID)
  })

  it('rejects with what onRetry throws, and sends nothing more', async () => {
    const thrown = new Error('stop here')
    const { client, received } = await clientOf((_n, _request, response) => reply(503, OVERLOADED)(response), { onRetry: () => { throw thrown } })
    await expect(client.create({ id: 1, name: 'x' })).rejects.toBe(thrown)
    expect(received).toHaveLength(1)
  })
})
