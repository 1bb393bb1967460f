import { watchFile } from 'node:fs'
import type { FastifyBaseLogger } from 'fastify'
import { readTokensFile, type TokenEntry } from './tokens.js'

// What a reload needs of the accepted set (plugins/auth.ts's TokenSet), so that config/ imports nothing from plugins/.
type TokenSet = { replace: (entries: readonly TokenEntry[]) => void, retain: (listed: readonly TokenEntry[]) => number }

/**
 * Reads the tokens file again and swaps the accepted set; true when taken. A file with a bad line adds nothing, so that
 * a typo cannot lock a client out, but a token it no longer lists is revoked even so (unless none would stay): a
 * revocation must not wait for another line's fix. An unreadable or empty file (a missing mount) changes nothing.
 */
export function reloadTokens (file: string, tokens: TokenSet, log: FastifyBaseLogger): boolean {
  const { entries, problem } = readTokensFile(file)
  if (problem === undefined) {
    tokens.replace(entries)
    log.info({ tokens: entries.length }, 'tokens reloaded')
    return true
  }
  const revoked = tokens.retain(entries)
  // The reason names the variable and the line; it never contains a token.
  log.warn({ reason: problem.message, revoked }, revoked === 0
    ? 'tokens not reloaded; the previous tokens stay accepted'
    : 'tokens not reloaded; those the file no longer lists are revoked, the others stay accepted')
  return false
}

/** Reloads on SIGHUP and when the file changes, polled by path (fs.watchFile) so that the symlink swap of a mounted
 * Kubernetes secret is seen too; `onReload` (metrics) learns if each was taken. Neither keeps the process alive. */
export function watchTokens (file: string, tokens: TokenSet, log: FastifyBaseLogger,
  onReload = (_taken: boolean): void => {}): void {
  const reload = (): void => { onReload(reloadTokens(file, tokens, log)) }
  process.on('SIGHUP', reload)
  watchFile(file, { interval: 2000, persistent: false }, reload)
}
