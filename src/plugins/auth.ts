import { hash, timingSafeEqual } from 'node:crypto'
import bearerAuth from '@fastify/bearer-auth'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { TokenEntry } from '../config.js'

/** Who sent a request, as its accepted token says: never read from anything else in the request. */
export interface Client {
  /** The access line's `client`: the configured name, or `sha256:` and 12 hex digits of the token's SHA-256. */
  readonly name: string
  /** The rate limit's counter: `client:<name>` for a named client, tokenRateLimitKey(token) otherwise. */
  readonly rateLimitKey: string
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by auth on the routes it guards: null until then, and when the token is refused. */
    client?: Client | null
  }
}

export type TokenSet = ReturnType<typeof createTokenSet>

/** The rate limit's key for an unnamed token: a digest apart from the token's plain SHA-256, never the token. */
export function tokenRateLimitKey (token: string): string {
  return hash('sha256', `plant-store/rate-limit\0${token}`, 'base64url')
}

/**
 * Plain tokens as UTF-8 with their clients; hashed entries by their SHA-256 (lowercase hex). The entries are
 * checked once, where they are read (config/tokens.ts): none empty, no token twice, digests well-formed.
 */
interface KnownTokens { plain: Array<{ key: Buffer, client: Client }>, hashed: Map<string, Client> }

function knownTokens (entries: readonly (TokenEntry | string)[]): KnownTokens {
  const known: KnownTokens = { plain: [], hashed: new Map() }
  const named = (name: string): Client => ({ name, rateLimitKey: `client:${name}` })
  for (const given of entries) {
    const entry = typeof given === 'string' ? { token: given } : given
    if ('sha256' in entry) known.hashed.set(entry.sha256, named(entry.name))
    else {
      const client = entry.name === undefined
        ? { name: `sha256:${hash('sha256', entry.token).slice(0, 12)}`, rateLimitKey: tokenRateLimitKey(entry.token) }
        : named(entry.name)
      known.plain.push({ key: Buffer.from(entry.token), client })
    }
  }
  return known
}

/**
 * The presented token is compared with every plain token by crypto.timingSafeEqual, as
 * @fastify/bearer-auth compares its keys; unmatched, its SHA-256 is looked up among the hashed
 * entries, a digest an attacker cannot steer towards a known one. Neither's time tells anything about
 * the tokens. `identify` gives the client a token belongs to (undefined: not accepted); `replace` swaps
 * the accepted tokens at once (rotation).
 */
export function createTokenSet (entries: readonly (TokenEntry | string)[]) {
  let known = knownTokens(entries)
  const identify = (token: string): Client | undefined => {
    const presented = Buffer.from(token)
    let found: Client | undefined
    for (const { key, client } of known.plain) {
      // Another length costs a comparison too.
      if (key.length !== presented.length) timingSafeEqual(key, key)
      else if (timingSafeEqual(key, presented)) found = client
    }
    return found ?? known.hashed.get(hash('sha256', token))
  }
  return {
    identify,
    verify: (token: string): boolean => identify(token) !== undefined,
    replace (next: readonly (TokenEntry | string)[]): void { known = knownTokens(next) }
  }
}

/**
 * Guards every route registered after it in the same scope: the routes of the authenticated scope in
 * app.ts. @fastify/bearer-auth reads the header (RFC 6749 mode: the scheme word in any case) in
 * onRequest, before the body; its own 401 errors go to the error handler, which words them.
 */
export const auth = fp<{ tokens: TokenSet }>(async function auth (app, { tokens }) {
  app.decorateRequest('client', null)
  await app.register(bearerAuth, {
    keys: new Set<string>(),
    auth: (token, request) => {
      request.client = tokens.identify(token) ?? null
      return request.client !== null
    },
    addHook: false,
    specCompliance: 'rfc6749'
  })
  app.addHook('onRequest', app.getDecorator<NonNullable<FastifyInstance['verifyBearerAuth']>>('verifyBearerAuth'))
}, { name: 'auth' })
