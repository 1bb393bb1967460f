import { createHash } from 'node:crypto'
import fc from 'fast-check'
import Fastify from 'fastify'
import { describe, expect, it, onTestFinished } from 'vitest'
import { auth, createTokenSet, tokenRateLimitKey } from '../../src/plugins/auth.js'
import { buildTestApp, postPlant, TOKEN } from '../helpers.js'

describe('createTokenSet', () => {
  const tokens = ['alpha-token-1', 'ünïcødé-tøken', 'x'.repeat(300)]

  it('accepts every configured token, whatever its length or characters', () => {
    const set = createTokenSet(tokens)
    for (const token of tokens) expect(set.identify(token), token).toMatchObject({ name: expect.stringMatching(/^sha256:[0-9a-f]{12}$/) })
  })

  it('refuses prefixes, extensions, near misses, case changes and the empty token', () => {
    const set = createTokenSet(tokens)
    for (const token of ['alpha-token-', 'alpha-token-12', 'alpha-token-2', 'ALPHA-TOKEN-1', 'ünïcødé-tøkeN', 'x'.repeat(299), 'x'.repeat(301), '']) {
      expect(set.identify(token), token).toBeUndefined()
    }
  })

  it('refuses a repetition, an extension or a prefix of a known token', () => {
    const set = createTokenSet(['ab12'])
    for (const token of ['ab12ab12', 'ab12a', 'ab1']) expect(set.identify(token), token).toBeUndefined()
  })

  it('tells apart a token and its UTF-8 bytes read as latin1 (each is compared as its own UTF-8 bytes)', () => {
    // 'é' (U+00E9) and its UTF-8 bytes read as latin1 ('Ã©') are different tokens.
    const set = createTokenSet(['é'])
    expect(set.identify('é')).toMatchObject({ name: `sha256:${createHash('sha256').update('é').digest('hex').slice(0, 12)}` })
    expect(set.identify('Ã©')).toBeUndefined()
  })

  it('accepts exactly the known tokens, for any known and presented tokens', () => {
    // Well-formed text, as tokens are (a file, the environment, a header read as latin1): lone surrogates
    // become the same U+FFFD once UTF-8 encoded.
    const token = fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
      fc.constantFrom('ab12', 'ab12ab12', 'é', 'Ã©')).filter((one) => one.isWellFormed())
    fc.assert(fc.property(fc.uniqueArray(token, { minLength: 1, maxLength: 4 }), token, fc.boolean(), (known, other, pickKnown) => {
      const presented = pickKnown ? known[other.length % known.length] as string : other
      expect(createTokenSet(known).identify(presented) !== undefined).toBe(known.includes(presented))
    }), { numRuns: 2000 })
  })

  // The entries are checked where they are read (an empty set, a token twice, a bad digest): test/config.test.ts,
  // and for a reload test/config/token-reload.test.ts and test/hardening/token-rotation.test.ts.
  it('replace swaps the accepted tokens at once', () => {
    const set = createTokenSet(['old'])
    set.replace(['new-1', 'new-2'])
    expect([(set.identify('old') !== undefined), (set.identify('new-1') !== undefined), (set.identify('new-2') !== undefined)]).toEqual([false, true, true])
  })

  it('forgets at a rotation the tokens it accepted before: refused once removed, renamed when renamed', () => {
    const set = createTokenSet(['kept', { name: 'before', token: 'renamed' }, 'dropped'])
    expect([set.identify('kept'), set.identify('renamed')?.name, set.identify('dropped')?.name]).toEqual([expect.anything(), 'before', expect.anything()])
    set.replace(['kept', { name: 'after', token: 'renamed' }])
    expect([set.identify('kept') !== undefined, set.identify('renamed')?.name, set.identify('dropped')]).toEqual([true, 'after', undefined])
  })
})

describe('createTokenSet with client names and hashed entries', () => {
  const sha256 = (token: string) => createHash('sha256').update(token).digest('hex')

  it('accepts a token whose SHA-256 is listed, and names its client', () => {
    const set = createTokenSet([{ name: 'billing', sha256: sha256('billing-secret-1') }, { name: 'shop', sha256: sha256('shop-secret-2') }])
    expect(set.identify('billing-secret-1')).toMatchObject({ name: 'billing' })
    expect(set.identify('shop-secret-2')).toMatchObject({ name: 'shop' })
  })

  it('refuses a wrong token, a near miss, the digest itself and the empty token when entries are hashed', () => {
    const set = createTokenSet([{ name: 'billing', sha256: sha256('billing-secret-1') }])
    for (const token of ['billing-secret-2', 'billing-secret-', 'billing-secret-11', sha256('billing-secret-1'), '']) {
      expect(set.identify(token), token).toBeUndefined()
      expect(set.identify(token), token).toBeUndefined()
    }
  })

  it('finds the right client among plain, named and hashed entries together', () => {
    const set = createTokenSet(['plain-1', { name: 'ci', token: 'ci-token' }, { name: 'billing', sha256: sha256('billing-secret-1') }, 'plain-2'])
    expect(['plain-1', 'ci-token', 'billing-secret-1', 'plain-2', 'other'].map((token) => set.identify(token)?.name))
      .toEqual([`sha256:${sha256('plain-1').slice(0, 12)}`, 'ci', 'billing', `sha256:${sha256('plain-2').slice(0, 12)}`, undefined])
  })

  it('labels an unnamed token with sha256: and the first 12 hex digits of its SHA-256: stable, never the token', () => {
    const token = 'abcdef012345abcdef012345'
    const first = createTokenSet([token]).identify(token)
    expect(first?.name).toBe(`sha256:${sha256(token).slice(0, 12)}`)
    expect(first?.name).not.toContain(token.slice(0, 4))
    // Another set (another process, after a restart) gives the same label.
    expect(createTokenSet(['x', token]).identify(token)?.name).toBe(first?.name)
  })

  it('keys the rate limit by client:<name> for a named client, by a digest of the token (not the token) otherwise', () => {
    const set = createTokenSet(['plain-1', { name: 'ci', token: 'ci-token' }, { name: 'billing', sha256: sha256('billing-secret-1') }])
    expect(set.identify('ci-token')?.rateLimitKey).toBe('client:ci')
    expect(set.identify('billing-secret-1')?.rateLimitKey).toBe('client:billing')
    expect(set.identify('plain-1')?.rateLimitKey).toBe(tokenRateLimitKey('plain-1'))
    expect(tokenRateLimitKey('plain-1')).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(tokenRateLimitKey('plain-1')).not.toContain('plain-1')
    // Kept apart from the token's plain SHA-256, the digest a `sha256:` entry lists (and its label's prefix).
    expect(tokenRateLimitKey('plain-1')).not.toBe(createHash('sha256').update('plain-1').digest('base64url'))
  })

  it('replace swaps hashed entries too', () => {
    const set = createTokenSet([{ name: 'old', sha256: sha256('old-token') }])
    set.replace([{ name: 'new', sha256: sha256('new-token') }])
    expect([(set.identify('old-token') !== undefined), (set.identify('new-token') !== undefined)]).toEqual([false, true])
    expect(set.identify('new-token')?.name).toBe('new')
  })

  it('finds every entry of a larger set, each by its own token only (the position of the match is kept, not the last or first)', () => {
    const entries = Array.from({ length: 9 }, (_, i) => i % 3 === 0
      ? `plain-${i}`
      : i % 3 === 1
        ? { name: `named-${i}`, token: `token-${i}` }
        : { name: `hashed-${i}`, sha256: sha256(`secret-${i}`) })
    const set = createTokenSet(entries)
    const tokenOf = (i: number) => i % 3 === 0 ? `plain-${i}` : i % 3 === 1 ? `token-${i}` : `secret-${i}`
    const names = Array.from({ length: 9 }, (_, i) => set.identify(tokenOf(i))?.name)
    expect(names).toEqual(Array.from({ length: 9 }, (_, i) => i % 3 === 0
      ? `sha256:${sha256(`plain-${i}`).slice(0, 12)}`
      : i % 3 === 1
        ? `named-${i}`
        : `hashed-${i}`))
  })
})

describe('auth with named and hashed tokens (app)', () => {
  const sha256 = (token: string) => createHash('sha256').update(token).digest('hex')

  it('answers 200 to a token listed only by its SHA-256, and 401 to a wrong one', async () => {
    const app = await buildTestApp({ tokens: [{ name: 'billing', sha256: sha256('billing-secret-1') }] })
    const json = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' })
    expect((await postPlant(app, { id: 1, name: 'fern' }, json('billing-secret-1'))).statusCode).toBe(200)
    const wrong = await postPlant(app, { id: 2, name: 'fern' }, json('billing-secret-2'))
    expect(wrong.statusCode).toBe(401)
    expect(wrong.json()).toEqual({ error: 401, message: 'invalid authorization header' })
  })
})

describe('auth refusals and failures (app)', () => {
  it('guards the routes registered after it in the scope it is registered in (it is not encapsulated)', async () => {
    const app = Fastify()
    onTestFinished(() => app.close())
    await app.register(auth, { tokens: createTokenSet([TOKEN]) })
    app.get('/guarded', async () => 'ok')
    expect((await app.inject({ method: 'GET', url: '/guarded' })).statusCode).toBe(401)
    const res = await app.inject({ method: 'GET', url: '/guarded', headers: { authorization: `Bearer ${TOKEN}` } })
    expect([res.statusCode, res.body]).toEqual([200, 'ok'])
  })

  it('gives each request of its scope a client, null before the token is read, so that every request has one shape', async () => {
    const app = Fastify()
    onTestFinished(() => app.close())
    const before: unknown[] = []
    app.addHook('onRequest', async (request) => { before.push(request.client) })
    await app.register(auth, { tokens: createTokenSet([{ name: 'ci', token: TOKEN }]) })
    app.get('/guarded', async (request) => request.client?.name)
    const res = await app.inject({ method: 'GET', url: '/guarded', headers: { authorization: `Bearer ${TOKEN}` } })
    expect([res.statusCode, res.body, before]).toEqual([200, 'ci', [null]])
  })

  it('leaves a refused token to the access line: no error-level line, no line of @fastify/bearer-auth\'s own, never the token', async () => {
    const logLines: string[] = []
    const app = await buildTestApp({ logLines })
    const wrong = 'wrong-token-987654321'
    expect((await postPlant(app, { id: 1, name: 'fern' }, { authorization: `Bearer ${wrong}`, 'content-type': 'application/json' })).statusCode).toBe(401)
    const entries = logLines.map((line) => JSON.parse(line) as { level: number, msg?: string, status?: number })
    expect(entries.filter((entry) => entry.status === 401).map((entry) => [entry.msg, entry.level])).toEqual([['request', 30]])
    expect(entries.filter((entry) => entry.msg?.startsWith('unauthorized') === true)).toEqual([])
    expect(entries.filter((entry) => entry.level >= 50)).toEqual([])
    expect(logLines.join('\n')).not.toContain(wrong)
  })

  it('answers 500 with the generic Error record when the token set itself fails: the service\'s fault, not a 401 for the client', async () => {
    const tokenSet = createTokenSet([TOKEN])
    tokenSet.identify = () => { throw new Error('token store unavailable') }
    const app = await buildTestApp({ tokenSet })
    const res = await postPlant(app, { id: 1, name: 'fern' })
    expect(res.statusCode).toBe(500)
    expect(res.json()).toEqual({ error: 500, message: 'Internal Server Error' })
    expect(res.headers['www-authenticate']).toBeUndefined()
  })
})
