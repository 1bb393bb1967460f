import { watchFile } from 'node:fs'
import type { FastifyBaseLogger } from 'fastify'
import { readTokensFile } from './tokens.js'
import type { TokenSet } from '../plugins/auth.js'

export interface TokenReloadOptions {
  /** API_TOKENS_FILE */
  file: string
  tokens: TokenSet
  log: FastifyBaseLogger
  /** Told of each reload: taken, or refused (metrics). */
  onReload?: ((taken: boolean) => void) | undefined
}

/** Reads the tokens file again and swaps the accepted set. A file unreadable, empty or with a bad line is refused
 * whole and the previous set stays: a half-written file, a typo or a missing mount must not lock clients out. */
export function reloadTokens ({ file, tokens, log, onReload }: TokenReloadOptions): void {
  try {
    const next = readTokensFile(file)
    tokens.replace(next)
    log.info({ tokens: next.length }, 'tokens reloaded')
    onReload?.(true)
  } catch (error) {
    // The message names the variable and the reason; it never contains a token.
    log.warn({ reason: (error as Error).message }, 'tokens not reloaded; the previous tokens stay accepted')
    onReload?.(false)
  }
}

/** Reloads on SIGHUP and when the file changes, polled by path (fs.watchFile) so that the symlink swap of a mounted
 * Kubernetes secret is seen too. For the life of the process: neither keeps it alive. */
export function watchTokens (options: TokenReloadOptions): void {
  const reload = (): void => { reloadTokens(options) }
  process.on('SIGHUP', reload)
  watchFile(options.file, { interval: 2000, persistent: false }, reload)
}
