import { createHash } from 'node:crypto'
import fs, { mkdtempSync, rmSync, unwatchFile, writeFileSync } from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import pino from 'pino'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { readTokensFile } from '../../src/config/tokens.js'
import { createTokenSet } from '../../src/plugins/auth.js'
import { reloadTokens, watchTokens } from '../../src/config/token-reload.js'

const sha256 = (token: string) => createHash('sha256').update(token).digest('hex')

function setUp (text: string) {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-tokens-'))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'tokens')
  writeFileSync(file, text)
  const lines: string[] = []
  const log = pino(new Writable({
    write (chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter((line) => line !== ''))
      done()
    }
  }))
  const tokens = createTokenSet(readTokensFile(file).entries)
  const reloads: boolean[] = []
  return { file, lines, log, tokens, reloads, reload: () => { reloads.push(reloadTokens(file, tokens, log)) } }
}

describe('reloadTokens', () => {
  it('takes named and hashed entries from the file, and tells of the reload taken', () => {
    const { file, lines, tokens, reloads, reload } = setUp('old-token-0123456789\n')
    writeFileSync(file, `ci:ci-token-1-0123456789\nbilling:sha256:${sha256('billing-secret-1')}\n`)
    reload()
    expect(reloads).toEqual([true])
    expect(lines.map((line) => JSON.parse(line) as unknown)).toMatchObject([{ level: 30, msg: 'tokens reloaded', tokens: 2 }])
    expect(['old-token-0123456789', 'ci-token-1-0123456789', 'billing-secret-1'].map((token) => tokens.identify(token)?.name))
      .toEqual([undefined, 'ci', 'billing'])
  })

  it('refuses a file with one bad line whole, keeps the previous tokens, tells of the refusal, and logs the line number, never a token', () => {
    const { file, lines, tokens, reloads, reload } = setUp('ci:ci-token-1-0123456789\n')
    writeFileSync(file, `ci:ci-token-2-0123456789\n\nbilling:sha256:${sha256('billing-secret-1').slice(2)}\nshop:shop-token-1-0123456789\n`)
    reload()
    expect(reloads).toEqual([false])
    expect(tokens.identify('ci-token-1-0123456789')?.name).toBe('ci')
    expect(tokens.identify('ci-token-2-0123456789')).toBeUndefined()
    expect(tokens.identify('shop-token-1-0123456789')).toBeUndefined()
    expect(lines).toHaveLength(1)
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({
      level: 40,
      msg: 'tokens not reloaded; the previous tokens stay accepted',
      reason: 'API_TOKENS_FILE line 3: sha256: must be followed by exactly 64 hex digits, the SHA-256 of the token'
    })
    for (const secret of ['ci-token', 'shop-token', sha256('billing-secret-1').slice(2)]) expect(lines[0]).not.toContain(secret)
  })

  it('refuses a duplicate client name, keeping the previous tokens', () => {
    const { file, lines, tokens, reloads, reload } = setUp('ci:ci-token-1-0123456789\n')
    writeFileSync(file, 'ci:ci-token-2-0123456789\nci:ci-token-3-0123456789\n')
    reload()
    expect(reloads).toEqual([false])
    expect(tokens.identify('ci-token-1-0123456789')?.name).toBe('ci')
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ reason: 'API_TOKENS_FILE line 2: duplicate client name (first on line 1); names are unique' })
  })

  it('refuses a token shorter than 16 characters on reload, keeping the previous tokens, and logs its line', () => {
    const { file, lines, tokens, reloads, reload } = setUp('ci:ci-token-1-0123456789\n')
    writeFileSync(file, 'ci:ci-token-2-0123456789\nshop:short-token\n')
    reload()
    expect(reloads).toEqual([false])
    expect(tokens.identify('ci-token-1-0123456789')?.name).toBe('ci')
    expect(tokens.identify('ci-token-2-0123456789')).toBeUndefined()
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({
      level: 40,
      msg: 'tokens not reloaded; the previous tokens stay accepted',
      reason: 'API_TOKENS_FILE line 2: the token is shorter than 16 characters; use a random one, e.g. `openssl rand -hex 32`'
    })
    expect(lines[0]).not.toContain('short-token')
  })
  it('revokes a token the file no longer lists even when another line is bad, adds none, and logs how many it revoked', () => {
    const { file, lines, tokens, reloads, reload } = setUp('ci:ci-token-1-0123456789\nleaked:leaked-token-0123456789\n')
    writeFileSync(file, 'ci:ci-token-1-0123456789\nshop:short-token\nnew:new-token-0123456789\n')
    reload()
    expect(reloads).toEqual([false])
    expect(['ci-token-1-0123456789', 'leaked-token-0123456789', 'new-token-0123456789'].map((token) => tokens.identify(token)?.name))
      .toEqual(['ci', undefined, undefined])
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({
      level: 40,
      msg: 'tokens not reloaded; those the file no longer lists are revoked, the others stay accepted',
      reason: 'API_TOKENS_FILE line 2: the token is shorter than 16 characters; use a random one, e.g. `openssl rand -hex 32`',
      revoked: 1
    })
  })

  it('revokes nothing when a file with a bad line lists none of the accepted tokens, nor when it cannot be read', () => {
    const { file, lines, tokens, reloads, reload } = setUp('ci:ci-token-1-0123456789\n')
    writeFileSync(file, 'ci:ci-token-2-0123456789\nshop:short-token\n')
    reload()
    rmSync(file)
    reload()
    expect(reloads).toEqual([false, false])
    expect(tokens.identify('ci-token-1-0123456789')?.name).toBe('ci')
    expect(lines.map((line) => JSON.parse(line) as { revoked: number })).toMatchObject([{ revoked: 0 }, { revoked: 0 }])
  })
})

describe('watchTokens', () => {
  it('reloads on SIGHUP and watches the file every 2 s, telling whether each reload was taken (a change itself: test/hardening/token-rotation.test.ts)', () => {
    const { file, log, tokens } = setUp('ci:ci-token-1-0123456789\n')
    const taken: boolean[] = []
    const others = process.listeners('SIGHUP')
    // The poll itself: every 2 s, by path, and never what keeps the process alive.
    const watchFile = vi.spyOn(fs, 'watchFile')
    syncBuiltinESMExports()
    onTestFinished(() => {
      watchFile.mockRestore()
      syncBuiltinESMExports()
    })
    watchTokens(file, tokens, log, (one) => { taken.push(one) })
    expect(watchFile.mock.calls.map(([path, options]) => [path, options])).toEqual([[file, { interval: 2000, persistent: false }]])
    // Its own listener, called as a SIGHUP would: emitting one would call every other listener of this process too.
    const [onSighup, ...more] = process.listeners('SIGHUP').filter((listener) => !others.includes(listener))
    onTestFinished(() => {
      if (onSighup !== undefined) process.off('SIGHUP', onSighup)
      unwatchFile(file)
    })
    expect([typeof onSighup, more]).toEqual(['function', []])
    writeFileSync(file, 'shop:shop-token-1-0123456789\n')
    onSighup?.('SIGHUP')
    writeFileSync(file, '')
    onSighup?.('SIGHUP')
    expect([taken, tokens.identify('shop-token-1-0123456789')?.name]).toEqual([[true, false], 'shop'])
  })
})
