import { watchFile } from 'node:fs'
import type { FastifyBaseLogger } from 'fastify'
import { readTokensFile, type TokenEntry } from './tokens.js'

export interface TokenReloadOptions {
  /** API_TOKENS_FILE */
  file: string
  /** The accepted set (plugins/auth.ts). */
  tokens: { replace (entries: TokenEntry[]): void, retain (entries: TokenEntry[]): number }
  log: FastifyBaseLogger
  /** Told of each reload: taken, or refused (metrics). */
  onReload?: ((taken: boolean) => void) | undefined
}

/**
 * Reads the tokens file again and swaps the accepted set. A file with a bad line adds nothing, so that a typo cannot
 * lock a client out, but a token it no longer lists is revoked even so (unless none would stay): a revocation must not
 * wait for another line's fix. An unreadable or empty file (a missing mount) changes nothing.
 */
export function reloadTokens ({ file, tokens, log, onReload }: TokenReloadOptions): void {
  const { entries, problem } = readTokensFile(file)
  if (problem === undefined) {
    tokens.replace(entries)
    log.info({ tokens: entries.length }, 'tokens reloaded')
  } else {
    const revoked = entries.length === 0 ? 0 : tokens.retain(entries)
    // The reason names the variable and the line; it never contains a token.
    log.warn({ reason: problem.message, revoked }, revoked === 0
      ? 'tokens not reloaded; the previous tokens stay accepted'
      : 'tokens not reloaded; those the file no longer lists are revoked, the others stay accepted')
  }
  onReload?.(problem === undefined)
}

/** Reloads on SIGHUP and when the file changes, polled by path (fs.watchFile) so that the symlink swap of a mounted
 * Kubernetes secret is seen too. For the life of the process: neither keeps it alive. */
export function watchTokens (options: TokenReloadOptions): void {
  const reload = (): void => { reloadTokens(options) }
  process.on('SIGHUP', reload)
  watchFile(options.file, { interval: 2000, persistent: false }, reload)
}
