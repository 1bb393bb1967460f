import bearerAuth from '@fastify/bearer-auth'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { InvalidTokenError, MissingTokenError } from '../errors.js'

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
 * Guards every route registered after it in the same scope. @fastify/bearer-auth checks the header
 * (scheme word case-insensitive, RFC 6749 mode) in onRequest, before the body is read; with
 * `addHook: false` its failures come back to us, and become the named 401 errors that the error
 * handler turns into the Error record with its WWW-Authenticate challenge.
 */
export const auth = fp(async function auth (app: FastifyInstance, { tokens }: AuthOptions) {
  await app.register(bearerAuth, {
    keys: [],
    auth: (token) => tokens.verify(token),
    addHook: false,
    specCompliance: 'rfc6749',
    verifyErrorLogLevel: 'debug'
  })
  const verify = app.verifyBearerAuth
  if (verify === undefined) throw new Error('@fastify/bearer-auth did not decorate verifyBearerAuth')
  app.addHook('onRequest', (request, reply, done) => {
    verify(request, reply, (error) => {
      if (error === undefined) done()
      else if ((error as { code?: string }).code === 'FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER') done(new MissingTokenError())
      else if (reply.statusCode === 401) done(new InvalidTokenError())
      else done(error)
    })
  })
}, { name: 'auth' })
