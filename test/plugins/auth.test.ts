import { describe, expect, it } from 'vitest'
import { createTokenSet } from '../../src/plugins/auth.js'

describe('createTokenSet', () => {
  const tokens = ['alpha-token-1', 'ünïcødé-tøken', 'x'.repeat(300)]

  it('accepts every configured token, whatever its length or characters', () => {
    const set = createTokenSet(tokens)
    for (const token of tokens) expect(set.verify(token)).toBe(true)
  })

  it('refuses prefixes, extensions, near misses, case changes and the empty token', () => {
    const set = createTokenSet(tokens)
    for (const token of ['alpha-token-', 'alpha-token-12', 'alpha-token-2', 'ALPHA-TOKEN-1', 'ünïcødé-tøkeN', 'x'.repeat(299), 'x'.repeat(301), '']) {
      expect(set.verify(token), token).toBe(false)
    }
  })

  it('refuses a repetition of a known token (the known token is read cyclically, the lengths still differ)', () => {
    const set = createTokenSet(['ab12'])
    for (const token of ['ab12ab12', 'ab12a', 'ab1']) expect(set.verify(token), token).toBe(false)
  })

  it('tells apart tokens whose UTF-8 bytes share a latin1 reading (UTF-16 code units are compared, not bytes)', () => {
    // 'é' (U+00E9) and its UTF-8 bytes read as latin1 ('Ã©') are different tokens.
    const set = createTokenSet(['é'])
    expect(set.verify('é')).toBe(true)
    expect(set.verify('Ã©')).toBe(false)
  })

  it('replace swaps the accepted tokens at once and refuses an empty set', () => {
    const set = createTokenSet(['old'])
    set.replace(['new-1', 'new-2'])
    expect([set.verify('old'), set.verify('new-1'), set.verify('new-2')]).toEqual([false, true, true])
    expect(() => set.replace([])).toThrow(/empty set/)
    expect(() => set.replace(['new-3', ''])).toThrow(/empty token/)
    expect(set.verify('new-1')).toBe(true)
  })
})
