import { readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load-config.js'
import { Env } from '../../src/config/env.js'
import {
  anchors, brokenLinks, candidateNames, configReads, linkTargets, schemaMismatches, slug, tableVariables, workHistory
} from './doc-checks.js'

// The README is for a newcomer; everything else lives in docs/, one topic a page. These tests keep the
// two honest as the code moves: no dead link, no setting documented that the service does not read,
// none read that the configuration page does not document.

const root = fileURLToPath(new URL('../../', import.meta.url))
const README = join(root, 'README.md')
const BENCH_README = join(root, 'bench', 'README.md')
const DOCS = join(root, 'docs')
const pages = readdirSync(DOCS).filter((name) => name.endsWith('.md')).map((name) => join(DOCS, name))
const read = (file: string): string => readFileSync(file, 'utf8')

const lines = (file: string): number => read(file).split('\n').length - (read(file).endsWith('\n') ? 1 : 0)

describe('README.md', () => {
  it('is at most 200 lines', () => {
    expect(lines(README)).toBeLessThanOrEqual(200)
  })

  it('links to every page of docs/', () => {
    const linked = new Set(linkTargets(read(README)).map((target) => target.split('#')[0]))
    expect(pages.map((page) => `docs/${basename(page)}`).filter((page) => !linked.has(page))).toEqual([])
  })

  it('shows the two commands a newcomer runs first: npm start with a token, then npm test', () => {
    const firstScreen = read(README).split('\n').slice(0, 40).join('\n')
    expect(firstScreen).toMatch(/API_TOKENS=\S+ npm start/)
    expect(firstScreen).toMatch(/^npm test\b/m)
  })

  it('lists as main settings only variables the service reads', () => {
    const names = tableVariables(read(README))
    expect(names).toContain('API_TOKENS')
    expect(names.filter((name) => !configReads(name))).toEqual([])
  })
})

describe('docs/', () => {
  it('is at most 1,200 lines in all, and performance.md at most 200', () => {
    expect(pages.reduce((sum, page) => sum + lines(page), 0)).toBeLessThanOrEqual(1200)
    expect(lines(join(DOCS, 'performance.md'))).toBeLessThanOrEqual(200)
  })

  it('bench/README.md is at most 100 lines', () => {
    expect(lines(BENCH_README)).toBeLessThanOrEqual(100)
  })

  it.each([README, BENCH_README, ...pages].map((file) => [file.slice(root.length), file]))('%s says nothing of how the work was organised', (_name, file) => {
    expect(workHistory(read(file))).toEqual([])
  })
})

describe('relative links in README.md, bench/README.md and docs/', () => {
  it.each([README, BENCH_README, ...pages].map((file) => [file.slice(root.length),
    file]))('%s: every link leads to a file, and to a heading when it names one', (_name, file) => {
    expect(brokenLinks(file)).toEqual([])
  })
})

describe('docs/configuration.md', () => {
  const documented = tableVariables(read(join(DOCS, 'configuration.md')))

  it('documents every environment variable src/config/load-config.ts reads', () => {
    const read = [...candidateNames(join(root, 'src'))].filter((name) => configReads(name))
    expect(read).toContain('DATABASE_URL') // the detection works at all
    expect(read.filter((name) => !documented.includes(name)).sort()).toEqual([])
  })

  it('documents no variable that src/config/load-config.ts does not read', () => {
    expect(documented.length).toBeGreaterThan(10)
    expect(documented.filter((name) => !configReads(name))).toEqual([])
  })

  it('documents each variable once', () => {
    expect(documented.filter((name, index) => documented.indexOf(name) !== index)).toEqual([])
  })

  it('gives each variable the default, the bounds and the choices of src/config/env.ts', () => {
    expect(schemaMismatches(read(join(DOCS, 'configuration.md')), Env.properties)).toEqual([])
  })
})

// The checks themselves, on inputs that are wrong on purpose: a check that cannot fail keeps nothing honest.
describe('the checks', () => {
  it('find a link to a missing file, and one to a missing heading', () => {
    const file = join(DOCS, 'configuration.md')
    expect(brokenLinks(file, '[ok](api.md) [gone](no-such-page.md) [ok](storage.md#high-availability) [bad](storage.md#no-such-heading)'))
      .toEqual(['no-such-page.md: no file docs/no-such-page.md', 'storage.md#no-such-heading: no heading with the anchor #no-such-heading'])
  })

  it('find a missing heading within the same file, and ignore links and headings inside code', () => {
    const file = join(DOCS, 'configuration.md')
    const markdown = '## Real one\n[a](#real-one) [b](#missing)\n```sh\n# not-a-heading\n[c](nowhere.md)\n```\n`[d](nowhere.md)`'
    expect(brokenLinks(file, markdown)).toEqual(['#missing: no heading with the anchor #missing'])
  })

  it('make anchors as GitHub does', () => {
    expect(slug('Why "outcome unknown" and a replay is the contract')).toBe('why-outcome-unknown-and-a-replay-is-the-contract')
    expect(slug('Traces (OTLP)')).toBe('traces-otlp')
    expect(slug('Token check and client field (named clients)')).toBe('token-check-and-client-field-named-clients')
    expect(slug('bench/: `npm run bench`')).toBe('bench-npm-run-bench')
    expect([...anchors('# A\n## A\n### A')]).toEqual(['a', 'a-1', 'a-2'])
  })

  it('see a variable that loadConfig reads, and not one it ignores', () => {
    expect(configReads('METRICS_HOST')).toBe(true) // read only as a string of at least one character
    expect(configReads('REDIS_URL')).toBe(true)
    expect(configReads('NODE_ENV')).toBe(false)
    expect(configReads('MEMORY_STORE_SHARE_OF_LIMIT')).toBe(false) // a constant, not a variable
  })

  it('see a variable added to the configuration, and one removed from it', () => {
    const withExtra: typeof loadConfig = (env, system) => ({ ...loadConfig(env, system), extra: env.NEW_SETTING_MS })
    expect(configReads('NEW_SETTING_MS', withExtra)).toBe(true)
    const withoutPort: typeof loadConfig = (env, system) => loadConfig({ ...env, PORT: undefined }, system)
    expect(configReads('PORT', withoutPort)).toBe(false)
  })

  it('find words about how the work was organised, and leave the terms of the domain alone', () => {
    // Each flagged line joined from parts, so that this file holds none of them whole.
    const flagged = [
      ['Measured in the second', 'session of', '2026-11-25.'],
      ['As', 'issue', '30 asked.'],
      ['The last', 'pass, as other', 'agents saw it.']
    ].map((parts) => parts.join(' '))
    expect(workHistory([flagged[0], flagged[1], 'PgBouncer in session mode.', flagged[2]].join('\n'))).toEqual(flagged)
  })

  it('find a table that disagrees with the configuration schema, and pass one that agrees', () => {
    const schema = { PORT: { minimum: 0, maximum: 65535, default: 3000 }, LOG_LEVEL: { pattern: '^(info|warn)$', default: 'info' } }
    expect(schemaMismatches('| `PORT` | `3000` | TCP port (0 … 65535). |\n| `LOG_LEVEL` | `info` | `info` or `warn`. |', schema)).toEqual([])
    expect(schemaMismatches('| `PORT` | `8080` | TCP port (1 … 65535). |\n| `LOG_LEVEL` | `info` | `info` only. |', schema))
      .toEqual(['PORT: default 3000', 'PORT: 0 … 65535', 'LOG_LEVEL: warn'])
  })

  it('read the variables of a table, one or several a row, with or without backticks', () => {
    expect(tableVariables('| variable | default |\n|---|---|\n| `API_TOKENS` | |\n| PORT, `HOST` | 3000 |\n| 200 | ok |\n'))
      .toEqual(['API_TOKENS', 'PORT', 'HOST'])
  })
})
