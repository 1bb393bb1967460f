import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { docBlocks, parseDocBlocks } from './blocks.js'
import { docBlockCalls, unnamedRunnableBlocks, unrunBlocks } from './doc-checks.js'

// Every recipe a user would paste is code: a block of a README, docs/ or deploy/ in any language
// (sh, sql, yaml, ini, haproxy, ts…) names itself (```sh name) and some test runs it, found by a call
// of docBlock with the page and the name as literal strings; an output or a reply is a `text` or `json`
// block, and part of a larger file is named `excerpt`. A new recipe without a test fails here.

const root = fileURLToPath(new URL('../../', import.meta.url))

/** The files under `dir` (relative to the root) whose names end with `suffix`, node_modules aside. */
function filesUnder (dir: string, suffix: string): string[] {
  const found: string[] = []
  const visit = (path: string): void => {
    if (!existsSync(path)) return
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue
      const child = join(path, entry.name)
      if (entry.isDirectory()) visit(child)
      else if (entry.name.endsWith(suffix)) found.push(relative(root, child))
    }
  }
  visit(join(root, dir))
  return found
}

const pages = ['README.md', ...['bench', 'client', 'openapi', 'src'].map((dir) => `${dir}/README.md`),
  ...filesUnder('docs', '.md'), ...filesUnder('deploy', '.md')]
const sources = [...filesUnder('test', '.ts'), ...filesUnder('client', '.ts')]
const calls = new Set(sources.flatMap((source) => docBlockCalls(readFileSync(join(root, source), 'utf8'))))

describe('the recipes of the READMEs, docs/ and deploy/', () => {
  it('name every block but an output or a reply (`text`, `json`)', () => {
    expect(pages.flatMap((page) => unnamedRunnableBlocks(page, docBlocks(join(root, page))))).toEqual([])
  })

  it('are each run by a test', () => {
    expect(calls.size).toBeGreaterThan(0) // the scan finds the calls at all
    expect(pages.flatMap((page) => unrunBlocks(page, docBlocks(join(root, page)), calls))).toEqual([])
  })

  it('are each looked up where they are (no test runs a block that is gone)', () => {
    const named = new Set(pages.flatMap((page) => docBlocks(join(root, page)).flatMap((block) => block.name === undefined ? [] : [`${page}#${block.name}`])))
    expect([...calls].filter((call) => !named.has(call))).toEqual([])
  })
})

// The checks on inputs that are wrong on purpose. The calls are joined from parts, so that this file
// holds none whole (the scan above reads it too).
describe('the block checks', () => {
  const call = (file: string, name: string): string => ['docBlock(', `'${file}', '${name}'`, ')'].join('')
  const page = '# P\n```sh start\nnpm start\n```\n```sql\nSELECT 1;\n```\n```text\nnpm test\n```\n```json\n{}\n```\n```yaml scrape\na: 1\n```\n' +
    '```ini\na = 1\n```\n```ts excerpt\nf()\n```\n'

  it('find a runnable block without a name, in any language, and leave text and JSON alone', () => {
    expect(unnamedRunnableBlocks('p.md', parseDocBlocks(page))).toEqual(['p.md:5 sql', 'p.md:17 ini'])
  })

  it('find a named block that no test runs, and a name given twice', () => {
    const ran = new Set(docBlockCalls(`${call('p.md', 'start')}\nconst x = ${call('p.md', 'other')}`))
    expect([...ran]).toEqual(['p.md#start', 'p.md#other'])
    expect(unrunBlocks('p.md', parseDocBlocks(page), ran)).toEqual(['p.md#scrape']) // an excerpt is never run
    expect(unrunBlocks('p.md', parseDocBlocks('```sh a\n```\n```sh a\n```\n'), new Set(['p.md#a']))).toEqual(['p.md#a'])
  })

  it('read a call only with literal strings', () => {
    expect(docBlockCalls(`docBlock(file, 'start') ${call('README.md', 'try-it')}`)).toEqual(['README.md#try-it'])
  })
})
