import { execFile, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { docBlock } from './blocks.js'

// docs/testing.md's mutation commands. A run takes tens of minutes on two cores, too long for a test: this
// checks that each line would start one as the page says, the script in package.json, the options Stryker's,
// the file one the run mutates.
const root = fileURLToPath(new URL('../../', import.meta.url))
const block = docBlock('docs/testing.md', 'mutation')
const lines = block.split('\n').map((line) => line.replace(/\s+#.*$/, '')).filter((line) => line !== '')
const commands = lines.join('\n')
const scripts = (JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { scripts: Record<string, string> }).scripts

describe('docs/testing.md: the mutation commands', () => {
  it('are bash, and each runs a script of package.json that starts `stryker run`', () => {
    expect(spawnSync('bash', ['-n'], { input: block }).status).toBe(0)
    expect(lines.map((line) => /^npm run ([\w:]+)(?: -- .*)?$/.exec(line)?.[1])).toEqual(['mutation', 'mutation', 'mutation:incremental'])
    expect([scripts.mutation, scripts['mutation:incremental']]).toEqual(['stryker run', 'stryker run --incremental'])
  })

  it('pass only options `stryker run --help` lists, and --mutate a file of the mutate list', async () => {
    const { stdout } = await promisify(execFile)(`${root}node_modules/.bin/stryker`, ['run', '--help'], { cwd: root, timeout: 30000 })
    const options = [...commands.matchAll(/ (--[a-z][\w-]*)/g)].map((match) => match[1])
    expect(options).toEqual(['--mutate'])
    for (const option of [...options, '--incremental']) expect(stdout).toContain(`${option} `)
    const mutate = /^ {2}mutate: \[([^\]]*)\]/m.exec(readFileSync(`${root}stryker.config.mjs`, 'utf8'))?.[1]
    expect(mutate).toContain(`'${/ --mutate (\S+)/.exec(commands)?.[1] ?? ''}'`)
  }, 30000)
})
