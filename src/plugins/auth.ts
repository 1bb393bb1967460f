import { hash } from 'node:crypto'
import bearerAuth from '@fastify/bearer-auth'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { TokenEntry } from '../config/tokens.js'

/**
 * Who sent a request, as its accepted token says: never read from anything else in the request. `name` is the access
 * line's `client`: the configured name, or `sha256:` and 12 hex digits of the token's SHA-256. `rateLimitKey` is the
 * rate limit's counter: `client:<name>` for a named client, tokenRateLimitKey(token) otherwise.
 */
export interface Client { readonly name: string, readonly rateLimitKey: string }

declare module 'fastify' {
  interface FastifyRequest {
    /** On the routes auth guards: who sent the request once its token is read, else null. Absent on open routes. */
    client?: Client | null
  }
}

export type TokenSet = ReturnType<typeof createTokenSet>

/** The rate limit's key for an unnamed token: a digest apart from the token's plain SHA-256, never the token. */
export function tokenRateLimitKey (token: string): string {
  return hash('sha256', `plant-store/rate-limit\0${token}`, 'base64url')
}

/**
 * The accepted tokens by their SHA-256 (a quarter of a microsecond a request), which an attacker cannot steer towards a
 * known one. `replace` is the rotation.
 */
export function createTokenSet (entries: readonly (TokenEntry | string)[]) {
  const clientsOf = (list: readonly (TokenEntry | string)[]) => new Map(list.map((given): [string, Client] => {
    const entry = typeof given === 'string' ? { token: given } : given
    if ('sha256' in entry) return [entry.sha256, { name: entry.name, rateLimitKey: `client:${entry.name}` }]
    const digest = hash('sha256', entry.token)
    return [digest, entry.name === undefined
      ? { name: `sha256:${digest.slice(0, 12)}`, rateLimitKey: tokenRateLimitKey(entry.token) }
      : { name: entry.name, rateLimitKey: `client:${entry.name}` }]
  }))
  let clients = clientsOf(entries)
  return {
    identify: (token: string): Client | undefined => clients.get(hash('sha256', token)),
    replace (next: readonly (TokenEntry | string)[]): void { clients = clientsOf(next) },
    /** Revokes the tokens `listed` leaves out, unless none would stay; returns how many. */
    retain (listed: readonly TokenEntry[]): number {
      const still = clientsOf(listed)
      const kept = new Map([...clients].filter(([digest]) => still.has(digest)))
      const revoked = kept.size === 0 ? 0 : clients.size - kept.size
      if (revoked > 0) clients = kept
      return revoked
    }
  }
}

/**
 * Guards the routes registered after it in its scope (app.ts). @fastify/bearer-auth reads the header before
 * the body (RFC 6749: the scheme word in any case); its 401 errors go to the error handler.
 */
export const auth = fp<{ tokens: TokenSet }>(async function auth (app, { tokens }) {
  // Declared, so that every request of the guarded scope has the same shape from its start.
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
})
