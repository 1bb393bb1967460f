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

interface Known {
  /** Every accepted token's SHA-256 digest (a plain token's computed once, here), in the order of the entries. */
  digests: Buffer[]
  /** The client of each digest. */
  clients: Client[]
}

function knownTokens (entries: readonly (TokenEntry | string)[]): Known {
  if (entries.length === 0) throw new Error('refusing to replace the tokens with an empty set')
  const known: Known = { digests: [], clients: [] }
  const seen = new Set<string>()
  for (const given of entries) {
    const entry = typeof given === 'string' ? { token: given } : given
    if ('token' in entry && entry.token.length === 0) throw new Error('refusing an empty token')
    if ('sha256' in entry && !/^[0-9a-f]{64}$/.test(entry.sha256)) throw new Error('refusing a SHA-256 that is not 64 lowercase hex digits')
    const digest = 'sha256' in entry ? entry.sha256 : hash('sha256', entry.token)
    // One match at most, so that identify() can add up the matches (config.ts says which line).
    if (seen.has(digest)) throw new Error('refusing a token listed twice')
    seen.add(digest)
    known.digests.push(Buffer.from(digest, 'hex'))
    known.clients.push('sha256' in entry || entry.name !== undefined
      ? { name: entry.name as string, rateLimitKey: `client:${entry.name as string}` }
      : { name: `sha256:${digest.slice(0, 12)}`, rateLimitKey: tokenRateLimitKey(entry.token) })
  }
  return known
}

/**
 * The accepted tokens, compared in a time that tells nothing about them: the presented token's
 * SHA-256 (one per request; its time depends only on the presented token's length, which its sender
 * knows) against every known digest with `crypto.timingSafeEqual` (equal lengths, 32 bytes), every
 * entry with no early exit and no branch on a match, so the time says neither which entry matched
 * nor how long a known token is. Node's documented constant-time compare, rather than our own:
 * `npm run bench:instructions` measured the hand-written one at less than 3 % of a request
 * (bench/README.md, "Token check").
 */
export function createTokenSet (entries: readonly (TokenEntry | string)[]): TokenSet {
  let known = knownTokens(entries)
  const set: TokenSet = {
    identify (token) {
      const { digests, clients } = known
      const digest = hash('sha256', token, 'buffer')
      // found is the matching entry's position + 1 (tokens are unique), or 0.
      let found = 0
      let position = 0
      for (const candidate of digests) found |= -Number(timingSafeEqual(digest, candidate)) & ++position
      return found === 0 ? undefined : clients[found - 1]
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
    keys: [],
    auth: (token, request) => {
      request.client = tokens.identify(token) ?? null
      return request.client !== null
    },
    addHook: false,
    specCompliance: 'rfc6749',
    verifyErrorLogLevel: 'debug'
  })
  const verify = app.verifyBearerAuth
  if (verify === undefined) throw new Error('@fastify/bearer-auth did not decorate verifyBearerAuth')
  app.addHook('onRequest', (request, reply, done) => {
    verify(request, reply, (error) => {
      // An unmet Expect is answered only now, once the token is accepted (plugins/edge-refusals.ts).
      if (error === undefined) done(request.headers.expect === undefined ? undefined : unmetExpectation(request))
      else if ((error as { code?: string }).code === 'FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER') done(new MissingTokenError())
      else done(duplicateAuthorization(request) ?? (reply.statusCode === 401 ? new InvalidTokenError() : error))
    })
  })
}, { name: 'auth' })
