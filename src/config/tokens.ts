import { hash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { ConfigError } from './config-error.js'

/** RFC 6750 b64token: what can follow "Bearer ". It has no ':', which separates a client name. */
const TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/
const CLIENT_NAME = /^[A-Za-z0-9._-]{1,64}$/
const SHA256_ENTRY = /^sha256:[0-9A-Fa-f]{64}$/

/** `token`, `name:token` (a token of 16 characters or more), or `name:sha256:<64 hex digits>` (always named). */
export type TokenEntry = { name?: string, token: string } | { name: string, sha256: string }

/** The good entries of a tokens text, and its first problem: a bad entry, or no token at all. */
export interface TokenList { entries: TokenEntry[], problem?: ConfigError | undefined }

/**
 * API_TOKENS (comma-separated) or API_TOKENS_FILE (one entry a line). An error names the entry's
 * position, never its text: a mistyped entry could be a token. A token belongs to one client, so the
 * same token under two names (or a name and none) is refused; listed twice unnamed, it is one entry.
 */
export function readTokens (text: string, source: 'API_TOKENS' | 'API_TOKENS_FILE'): TokenList {
  const unit = source === 'API_TOKENS' ? 'entry' : 'line'
  const entries: TokenEntry[] = []
  let problem: ConfigError | undefined
  const names = new Map<string, number>()
  const digests = new Map<string, { position: number, named: boolean }>()
  for (const [index, listed] of text.split(source === 'API_TOKENS' ? ',' : /\r?\n/).entries()) {
    try {
      const item = listed.trim()
      if (item === '') continue
      const position = index + 1
      const bad = (reason: string): ConfigError => new ConfigError(`${source} ${unit} ${position}: ${reason}`)
      const colon = item.indexOf(':')
      const [name, rest] = [item.slice(0, colon), item.slice(colon + 1)]
      let entry: TokenEntry
      if (colon === -1) entry = { token: item }
      else if (name === 'sha256') throw bad('a hashed entry needs a client name in front: name:sha256:<64 hex digits>')
      else if (!CLIENT_NAME.test(name)) {
        throw bad('a client name is 1 to 64 characters of A-Z a-z 0-9 . _ - (then a colon, then the token)')
      } else if (rest === '') throw bad('no token after the client name')
      else if (names.has(name)) {
        throw bad(`duplicate client name (first on ${unit} ${names.get(name)}); names are unique`)
      } else if (SHA256_ENTRY.test(rest)) entry = { name, sha256: rest.slice('sha256:'.length).toLowerCase() }
      else if (rest.startsWith('sha256:')) {
        throw bad('sha256: must be followed by exactly 64 hex digits, the SHA-256 of the token')
      } else entry = { name, token: rest }
      if (colon !== -1) names.set(name, position)
      if ('token' in entry && !TOKEN.test(entry.token)) {
        throw bad('the token has characters a bearer token cannot carry ' +
        '(allowed: A-Z a-z 0-9 - . _ ~ + / and trailing =)')
      }
      // A short token can be guessed, and the 12 hex digits of its SHA-256 in the access line reversed.
      if ('token' in entry && entry.token.length < 16) {
        throw bad('the token is shorter than 16 characters; use a random one, e.g. `openssl rand -hex 32`')
      }
      const digest = 'sha256' in entry ? entry.sha256 : hash('sha256', entry.token)
      const same = digests.get(digest)
      if (same !== undefined) {
        if (entry.name === undefined && !same.named) continue
        throw bad(`the same token as ${unit} ${same.position}, under another client name or none; ` +
        'a token belongs to one client')
      }
      digests.set(digest, { position, named: entry.name !== undefined })
      entries.push(entry)
    } catch (error) {
      problem ??= error as ConfigError
    }
  }
  if (entries.length === 0) {
    problem ??= new ConfigError(`${source}: at least one bearer token is required (API_TOKENS or API_TOKENS_FILE); ` +
      'the service never runs open')
  }
  return { entries, problem }
}

/** API_TOKENS_FILE's TokenList; a file that cannot be read is a problem with no entries. */
export function readTokensFile (path: string): TokenList {
  try {
    return readTokens(readFileSync(path, 'utf8'), 'API_TOKENS_FILE')
  } catch (error) {
    return { entries: [], problem: new ConfigError(`API_TOKENS_FILE: ${(error as Error).message}`) }
  }
}
