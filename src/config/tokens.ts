import { hash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { ConfigError } from '../lib/config-error.js'

/** RFC 6750 b64token: what can follow "Bearer " in a header. It has no ':', which separates a client name. */
const TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/
const CLIENT_NAME = /^[A-Za-z0-9._-]{1,64}$/
const SHA256_HEX = /^[0-9A-Fa-f]{64}$/

/**
 * One accepted token, as API_TOKENS or API_TOKENS_FILE lists it: `token`, `name:token`, or
 * `name:sha256:<64 hex digits>` (only the token's SHA-256 is known, so a hashed entry is always named).
 */
export type TokenEntry = { name?: string, token: string } | { name: string, sha256: string }

/**
 * Parses the token list of API_TOKENS (entries separated by commas) or API_TOKENS_FILE (one entry a
 * line); blanks around an entry and blank entries are ignored. An error names the variable and the
 * entry's position (its line in the file, counting blank lines), never the entry's text: a mistyped
 * line could be a token.
 *
 * Names are unique. The same token listed twice without a name is one entry (as before names
 * existed); the same token under a name and again under another name, or without one, is refused:
 * a token belongs to one client, or its requests would be logged and counted under either. Tokens
 * are compared through their SHA-256, so a plain entry and a hashed entry of the same token are
 * found too.
 */
export function parseTokens (text: string, source: 'API_TOKENS' | 'API_TOKENS_FILE'): TokenEntry[] {
  const unit = source === 'API_TOKENS' ? 'entry' : 'line'
  const items = text.split(source === 'API_TOKENS' ? ',' : /\r?\n/)
  const entries: TokenEntry[] = []
  const names = new Map<string, number>()
  const digests = new Map<string, { position: number, named: boolean }>()
  for (const [index, listed] of items.entries()) {
    const item = listed.trim()
    if (item === '') continue
    const position = index + 1
    const bad = (problem: string): ConfigError => new ConfigError(`${source} ${unit} ${position}: ${problem}`)
    const colon = item.indexOf(':')
    const name = colon === -1 ? undefined : item.slice(0, colon)
    const rest = item.slice(colon + 1) // the whole item when it has no colon (-1 + 1)
    if (name === 'sha256') throw bad('a hashed entry needs a client name in front: name:sha256:<64 hex digits>')
    // Stryker disable next-line ConditionalExpression: equivalent: test(undefined) reads "undefined", a valid name
    if (name !== undefined && !CLIENT_NAME.test(name)) throw bad('a client name is 1 to 64 characters of A-Z a-z 0-9 . _ - (then a colon, then the token)')
    if (rest === '') throw bad('no token after the client name')
    let entry: TokenEntry
    let digest: string
    // Stryker disable next-line ConditionalExpression: equivalent: an item without a name has no colon, so never starts with sha256: (the test narrows name's type)
    if (name !== undefined && rest.startsWith('sha256:')) {
      const hex = rest.slice('sha256:'.length)
      if (!SHA256_HEX.test(hex)) throw bad('sha256: must be followed by exactly 64 hex digits, the SHA-256 of the token')
      digest = hex.toLowerCase()
      entry = { name, sha256: digest }
    } else {
      if (!TOKEN.test(rest)) throw bad('the token has characters a bearer token cannot carry (allowed: A-Z a-z 0-9 - . _ ~ + / and trailing =)')
      digest = hash('sha256', rest)
      entry = name === undefined ? { token: rest } : { name, token: rest }
    }
    if (name !== undefined) {
      const first = names.get(name)
      if (first !== undefined) throw bad(`duplicate client name (first on ${unit} ${first}); names are unique`)
      names.set(name, position)
    }
    const same = digests.get(digest)
    if (same !== undefined) {
      if (name === undefined && !same.named) continue
      throw bad(`the same token as ${unit} ${same.position}, under another client name or none; a token belongs to one client`)
    }
    digests.set(digest, { position, named: name !== undefined })
    entries.push(entry)
  }
  if (entries.length === 0) throw new ConfigError(`${source}: at least one bearer token is required; the service never runs open`)
  return entries
}

export function readTokensFile (path: string): TokenEntry[] {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new ConfigError(`API_TOKENS_FILE: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
  return parseTokens(text, 'API_TOKENS_FILE')
}
