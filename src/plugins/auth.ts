import { createHash, hash, timingSafeEqual } from 'node:crypto'
import bearerAuth from '@fastify/bearer-auth'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { TokenEntry } from '../config.js'
import { InvalidTokenError, MissingTokenError } from '../errors.js'
import { duplicateAuthorization, unmetExpectation } from './edge-refusals.js'

/** Who sent a request, as its accepted token says: never read from anything else in the request. */
export interface Client {
  /**
   * The access line's `client`: the configured name; for an unnamed token, `sha256:` and the first
   * 12 hex digits of the token's SHA-256 (stable across restarts and replicas; a name never has a ':').
   */
  readonly name: string
  /** The rate limit's counter: `client:<name>` for a named client, tokenRateLimitKey(token) for an unnamed one. */
  readonly rateLimitKey: string
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by auth on the routes it guards: null until then, and when the token is refused. Absent on other routes. */
    client?: Client | null
  }
}

/** The accepted bearer tokens, compared in a time that tells nothing about them. */
export interface TokenSet {
  /** The client the presented token belongs to, or undefined when it is not accepted. */
  identify (token: string): Client | undefined
  verify (token: string): boolean
  /** Swaps the accepted tokens at once (rotation); refuses an empty set and a token listed twice. */
  replace (entries: readonly (TokenEntry | string)[]): void
}

/**
 * The rate limit's key for an unnamed token: a digest, never the token, so neither Redis nor a
 * memory dump holds a credential. The fixed prefix keeps it apart from every other digest of the
 * token (the unnamed client label, a hashed entry).
 */
export function tokenRateLimitKey (token: string): string {
  return createHash('sha256').update('plant-store/rate-limit\0').update(token).digest('base64url')
}

/**
 * How a presented token differs from a known one: 0 when they are equal, in a time that depends
 * only on the presented token's length, which its sender knows anyway: every character is compared
 * (the known token read cyclically), with no branch on the data, so the time tells neither where
 * they differ nor how long the known token is. The lengths are compared inside the same sum.
 *
 * Kept instead of `crypto.timingSafeEqual` on SHA-256 digests because it buys more than 3 % of a
 * request (issue 25, re-measured 2026-11-24: 183 against 1,144 ns per check, 2,580 against 11,030
 * instructions under callgrind, a request being about 23 µs and 130,000 to 200,000 instructions:
 * docs/performance.md). Held equal to timingSafeEqual's verdict by a property test
 * (test/plugins/auth.test.ts). Compared as UTF-16 code units, so two different texts never match.
 */
function difference (presented: string, known: string): number {
  const length = known.length
  let difference = presented.length ^ length
  for (let i = 0; i < presented.length; i++) difference |= presented.charCodeAt(i) ^ known.charCodeAt(i % length)
  return difference
}

/** -1 (every bit set) when a difference is 0, else 0; without a branch (a difference is below 2^31). */
const sameMask = (difference: number): number => ~((difference | -difference) >> 31)

interface Known {
  plain: string[]
  /** The hashed entries' SHA-256 digests, 32 bytes each. */
  digests: Buffer[]
  /** The plain entries' clients, then the hashed entries'. */
  clients: Client[]
}

function knownTokens (entries: readonly (TokenEntry | string)[]): Known {
  if (entries.length === 0) throw new Error('refusing to replace the tokens with an empty set')
  const known: Known = { plain: [], digests: [], clients: [] }
  const hashedClients: Client[] = []
  const seen = new Set<string>()
  for (const given of entries) {
    const entry = typeof given === 'string' ? { token: given } : given
    if ('token' in entry && entry.token.length === 0) throw new Error('refusing an empty token')
    if ('sha256' in entry && !/^[0-9a-f]{64}$/.test(entry.sha256)) throw new Error('refusing a SHA-256 that is not 64 lowercase hex digits')
    const digest = 'sha256' in entry ? entry.sha256 : hash('sha256', entry.token)
    // One match at most, so that identify() can add up the matches (config.ts says which line).
    if (seen.has(digest)) throw new Error('refusing a token listed twice')
    seen.add(digest)
    if ('sha256' in entry) {
      known.digests.push(Buffer.from(entry.sha256, 'hex'))
      hashedClients.push({ name: entry.name, rateLimitKey: `client:${entry.name}` })
    } else {
      known.plain.push(entry.token)
      known.clients.push(entry.name === undefined
        ? { name: `sha256:${digest.slice(0, 12)}`, rateLimitKey: tokenRateLimitKey(entry.token) }
        : { name: entry.name, rateLimitKey: `client:${entry.name}` })
    }
  }
  known.clients.push(...hashedClients)
  return known
}

export function createTokenSet (entries: readonly (TokenEntry | string)[]): TokenSet {
  let known = knownTokens(entries)
  const set: TokenSet = {
    identify (token) {
      const { plain, digests, clients } = known
      // Every entry is compared, with no early exit and no branch on a match: the time taken does not
      // say which entry matched. found is the matching entry's position + 1 (tokens are unique), or 0.
      let found = 0
      let position = 0
      for (const candidate of plain) found |= sameMask(difference(token, candidate)) & ++position
      // Hashed entries: the presented token's SHA-256, made once at the first of them (none without
      // hashed entries), compared with every known digest by crypto.timingSafeEqual.
      let digest: Buffer | undefined
      for (const candidate of digests) {
        digest ??= hash('sha256', token, 'buffer')
        found |= sameMask(Number(!timingSafeEqual(digest, candidate))) & ++position
      }
      return clients[found - 1] // found 0 (no match) reads clients[-1]: undefined
    },
    verify (token) {
      return set.identify(token) !== undefined
    },
    replace (next) {
      known = knownTokens(next)
    }
  }
  return set
}

export interface AuthOptions {
  tokens: TokenSet
}

/**
 * Guards every route registered after it in the same scope. @fastify/bearer-auth checks the header
 * (scheme word case-insensitive, RFC 6749 mode) in onRequest, before the body is read; with
 * `addHook: false` its failures come back to us, and become the named 401 errors that the error
 * handler turns into the Error record with its WWW-Authenticate challenge. A request with two
 * Authorization headers is a 400 instead (RFC 6750 §3.1, edge-refusals.ts); an unmet Expect is a 417
 * once the token is accepted, never before.
 */
export const auth = fp(async function auth (app: FastifyInstance, { tokens }: AuthOptions) {
  app.decorateRequest('client', null)
  await app.register(bearerAuth, {
    // Stryker disable next-line ArrayDeclaration: with an auth function the plugin never reads keys (its types require them)
    keys: [],
    auth: (token, request) => {
      request.client = tokens.identify(token) ?? null
      return request.client !== null
    },
    addHook: false,
    specCompliance: 'rfc6749',
    // The access line is a 401's record. Today @fastify/bearer-auth logs nothing through pino at all
    // (its own-property check of fastify.log fails on pino's prototype methods, so no level at all);
    // were that fixed, its default would log every wrong token at error level.
    // Stryker disable next-line StringLiteral: equivalent today (the plugin turns any level off with pino, see above)
    verifyErrorLogLevel: 'debug'
  })
  // Throws at boot, not at the first request, if the plugin did not decorate it.
  const verify = app.getDecorator<NonNullable<FastifyInstance['verifyBearerAuth']>>('verifyBearerAuth')
  app.addHook('onRequest', (request, reply, done) => {
    verify(request, reply, (error) => {
      // An unmet Expect is answered only now, once the token is accepted (plugins/edge-refusals.ts).
      if (error === undefined) done(unmetExpectation(request))
      else if ((error as { code?: string }).code === 'FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER') done(new MissingTokenError())
      else done(duplicateAuthorization(request) ?? (reply.statusCode === 401 ? new InvalidTokenError() : error))
    })
  })
}, { name: 'auth' })
