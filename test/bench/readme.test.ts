import { execFile, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { docBlock } from '../docs/blocks.js'

// bench/README.md's bench:scale commands. Each fills stores for minutes (test/bench/scale.test.ts runs a short
// fill): this checks that each line would start one as the page says, with options and values bench/scale.js takes.
const root = fileURLToPath(new URL('../../', import.meta.url))
const block = docBlock('bench/README.md', 'scale')
const lines = block.split('\n').map((line) => line.replace(/\s+#.*$/, '')).filter((line) => line !== '')
const scripts = (JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { scripts: Record<string, string> }).scripts

describe('bench/README.md: the bench:scale commands', () => {
  it('are bash, and each runs `npm run bench:scale`, which builds and starts bench/scale.js', () => {
    expect(spawnSync('bash', ['-n'], { input: block }).status).toBe(0)
    expect(lines.map((line) => /^npm run ([\w:]+) -- /.exec(line)?.[1])).toEqual(lines.map(() => 'bench:scale'))
    expect(scripts['bench:scale']).toBe('npm run build && node bench/scale.js')
  })

  it('pass only options `bench/scale.js --help` lists, with stores and id patterns it knows', async () => {
    const { stdout: help } = await promisify(execFile)(process.execPath, [`${root}bench/scale.js`, '--help'], { timeout: 30000 })
    const listed = new Set([...help.matchAll(/^ {2}(--[a-z][\w-]*)/gm)].map((match) => match[1]))
    const stores = /--stores a,b +any of ([\w, ]+) \(/.exec(help)?.[1]?.split(', ')
    expect(stores).toEqual(['memory', 'peer', 'sqlite', 'postgres'])
    for (const line of lines) {
      const words = line.split(/\s+/).slice(4)
      const options = words.filter((word) => word.startsWith('--'))
      expect(options.filter((option) => !listed.has(option)), line).toEqual([])
      const value = (option: string): string | undefined => words[words.indexOf(option) + 1]
      if (options.includes('--stores')) expect(stores, line).toEqual(expect.arrayContaining(value('--stores')?.split(',') ?? ['']))
      if (options.includes('--ids')) expect(['random', 'ascending'], line).toEqual(expect.arrayContaining(value('--ids')?.split(',') ?? ['']))
      for (const option of ['--plants', '--prefill']) {
        if (options.includes(option)) expect(Number(value(option)), `${line}: ${option}`).toBeGreaterThan(0)
      }
      if (options.includes('--rebuild')) expect(options, line).toContain('--out')
    }
  }, 30000)
})
