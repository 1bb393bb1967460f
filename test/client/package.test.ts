import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { docBlock } from '../docs/blocks.js'
import { E2E_TOKEN, startServer } from '../e2e/storage-process.js'

// The package as a user gets it: `npm pack` (whose prepack builds it) ships the built JavaScript and its
// types and nothing else, and the example of docs/api.md type-checks against the packed types and runs,
// installed from the tarball, against the built service.

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CLIENT = join(ROOT, 'client')
const dir = mkdtempSync(join(tmpdir(), 'plant-store-client-pack-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let packed: { filename: string, files: Array<{ path: string }> }
beforeAll(async () => {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: CLIENT, timeout: 120000 })
  packed = (JSON.parse(stdout) as Array<typeof packed>)[0] as typeof packed
}, 120000)

describe('the plant-store-client package', () => {
  it('npm pack ships the built ES module, its types, its README, licence and package.json, and no sources', () => {
    expect(packed.filename).toBe('plant-store-client-1.0.0.tgz')
    expect(packed.files.map((file) => file.path).sort()).toEqual([
      'LICENSE', 'README.md', 'dist/index.d.ts', 'dist/index.js', 'dist/index.js.map', 'package.json'
    ])
  })

  it('runs the example of docs/api.md from the tarball against the built service, and type-checks it against the packed types', {
    timeout: 60000
  }, async () => {
    const app = join(dir, 'app')
    const installed = join(app, 'node_modules', 'plant-store-client')
    mkdirSync(installed, { recursive: true })
    await run('tar', ['-xzf', join(dir, packed.filename), '-C', installed, '--strip-components=1'])
    const server = await startServer({})
    const example = docBlock('docs/api.md', 'plant-store-client')
    // The page's address and token are the README's; this run's are the test server's.
    expect(example).toContain('\'http://127.0.0.1:3000\'')
    expect(example).toContain('\'change-me-to-a-long-secret\'')
    writeFileSync(join(app, 'example.mts'), example.replace('http://127.0.0.1:3000', server.url).replace('change-me-to-a-long-secret', E2E_TOKEN))

    const tsc = join(ROOT, 'node_modules', '@typescript', 'native', 'bin', 'tsc')
    await run(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2023', '--module', 'nodenext', '--moduleResolution', 'nodenext',
      '--types', 'node', '--typeRoots', join(ROOT, 'node_modules', '@types'), 'example.mts'], { cwd: app, timeout: 60000 })

    const { stdout } = await run(process.execPath, ['example.mts'], { cwd: app, timeout: 30000 })
    expect(stdout).toBe("{ name: 'Monstera', tag: 'tropical' }\n" +
      'conflict 409 a plant with id 9007199254740993 already exists with another name or tag\n')
  })
})
