import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { InvalidTokenError, MissingTokenError } from '../errors.js'
import { bearerToken } from '../lib/bearer.js'

/** The accepted bearer tokens, compared in a time that tells nothing about them. */
export interface TokenSet {
  verify (token: string): boolean
  /** Swaps the accepted tokens at once (rotation); refuses an empty set. */
  replace (tokens: readonly string[]): void
}

/**
 * Whether a presented token equals a known one, in a time that depends only on the presented
 * token's length, which its sender knows anyway: every character is compared (the known token
 * read cyclically), with no branch on the data, so the time tells neither where they differ nor
 * how long the known token is. The lengths are compared inside the same sum.
 *
 * No hashing: the SHA-256 digests compared before this cost 330 ns per request (bench/README.md),
 * for the same guarantee. Compared as UTF-16 code units, so two different texts never match.
 */
function sameToken (presented: string, known: string): boolean {
  const length = known.length
  let difference = presented.length ^ length
  for (let i = 0; i < presented.length; i++) difference |= presented.charCodeAt(i) ^ known.charCodeAt(i % length)
  return difference === 0
}

export function createTokenSet (tokens: readonly string[]): TokenSet {
  let known: readonly string[] = []
  const set: TokenSet = {
    verify (token) {
      let match = false
      // No early exit: the time taken does not say which token matched.
      for (const candidate of known) match = sameToken(token, candidate) || match
      return match
    },
    replace (next) {
      if (next.length === 0) throw new Error('refusing to replace the tokens with an empty set')
      if (next.some((token) => token.length === 0)) throw new Error('refusing an empty token')
      known = [...next]
    }
  }
  set.replace(tokens)
  return set
}

export interface AuthOptions {
  tokens: TokenSet
}

/**
 * Guards every route registered after it in the same scope: in onRequest, before the body is read,
 * the header is read as @fastify/bearer-auth (RFC 6749 mode: scheme word case-insensitive) reads it
 * (lib/bearer.ts, synchronous), and failures become the named 401 errors that the error handler
 * turns into the Error record with its WWW-Authenticate challenge (the access line records the 401).
 */
export const auth = fp(async function auth (app: FastifyInstance, { tokens }: AuthOptions) {
  app.addHook('onRequest', (request, _reply, done) => {
    const token = bearerToken(request.headers.authorization)
    if (typeof token === 'string' && tokens.verify(token)) {
      done()
      return
    }
    done(token === undefined ? new MissingTokenError() : new InvalidTokenError())
  })
}, { name: 'auth' })
