import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { docBlock } from '../docs/blocks.js'
import { E2E_TOKEN, startServer } from '../e2e/server-process.js'

// The package as a user gets it: `npm pack` (whose prepack builds it) ships the built JavaScript, its types and
// its map with the sources inside. Installed from the tarball into fresh projects (TypeScript with each module
// resolution, plain ESM, CommonJS), each example type-checks and runs against the built service, on this Node
// and on the oldest the engines field names (fetched by .ci/node.sh: CI sets REQUIRE_CLIENT_OLDEST_NODE=1).

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CLIENT = join(ROOT, 'client')
// TypeScript 7's compiler (the root's `typescript` is the TypeScript 6 API, which ships no `tsc`).
const TSC = join(ROOT, 'node_modules', '@typescript', 'native', 'bin', 'tsc')
// TypeScript 7 removed `node10` resolution: the users who still have it are on TypeScript 6, whose tsc this is.
const TSC6 = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc6')
const dir = mkdtempSync(join(tmpdir(), 'plant-store-client-pack-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const manifest = JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8')) as { engines: { node: string } }
const oldest = /^>=(\d+\.\d+\.\d+)$/.exec(manifest.engines.node)?.[1]

let packed: { filename: string, files: Array<{ path: string }> }
beforeAll(async () => {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: CLIENT, timeout: 120000 })
  packed = (JSON.parse(stdout) as Array<typeof packed>)[0] as typeof packed
}, 120000)

/** A fresh project with `files`, the tarball installed by npm as a user installs it. */
async function project (name: string, files: Record<string, unknown>): Promise<string> {
  const app = join(dir, name)
  mkdirSync(app)
  for (const [file, content] of Object.entries(files)) {
    writeFileSync(join(app, file), typeof content === 'string' ? content : JSON.stringify(content, null, 2))
  }
  await run('npm', ['install', '--no-audit', '--no-fund', join(dir, packed.filename)], { cwd: app, timeout: 120000 })
  return app
}

/** A TypeScript project's options: strict, this repository's @types/node, emitted to out/. */
const compilerOptions = (options: Record<string, unknown>) => ({
  compilerOptions: { target: 'es2022', strict: true, outDir: 'out', types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')], ...options }
})

// Each example imports a value and a type, and proves the types are the package's (not `any`) by an expected error.
const TS_EXAMPLE = (name: string) => `import { createPlantClient, PlantStoreError, type NewPlant } from 'plant-store-client'

// @ts-expect-error: a NewPlant has a name
const typed: NewPlant = { id: 1 }
const plants = createPlantClient({ baseUrl: String(process.env.PLANT_STORE_URL), token: String(process.env.PLANT_STORE_TOKEN) })
plants.create({ id: BigInt(String(process.env.PLANT_ID)), name: '${name}' })
  .then((plant) => { console.log(JSON.stringify(plant), typeof PlantStoreError, typeof typed) })
`
const JS_EXAMPLE = (name: string) => `
const plants = createPlantClient({ baseUrl: process.env.PLANT_STORE_URL, token: process.env.PLANT_STORE_TOKEN })
plants.create({ id: BigInt(process.env.PLANT_ID), name: '${name}' })
  .then((plant) => { console.log(JSON.stringify(plant), typeof PlantStoreError, 'object') })
`

/** The fresh projects: where each one's entry point is once built. */
const projects: Record<string, { files: Record<string, unknown>, tsc: boolean, entry: string }> = {
  // TypeScript 6 deprecates node10 (the default of module commonjs before it) but still resolves with it.
  node10: {
    files: {
      'package.json': { private: true },
      'tsconfig.json': compilerOptions({ module: 'commonjs', moduleResolution: 'node10', ignoreDeprecations: '6.0' }),
      'index.ts': TS_EXAMPLE('node10')
    },
    tsc: true,
    entry: 'out/index.js'
  },
  nodenext: {
    files: {
      'package.json': { private: true, type: 'module' },
      'tsconfig.json': compilerOptions({ module: 'nodenext', moduleResolution: 'nodenext' }),
      'index.ts': TS_EXAMPLE('nodenext')
    },
    tsc: true,
    entry: 'out/index.js'
  },
  bundler: {
    files: {
      'package.json': { private: true, type: 'module' },
      'tsconfig.json': compilerOptions({ module: 'esnext', moduleResolution: 'bundler' }),
      'index.ts': TS_EXAMPLE('bundler')
    },
    tsc: true,
    entry: 'out/index.js'
  },
  esm: {
    files: { 'package.json': { private: true }, 'index.mjs': `import { createPlantClient, PlantStoreError } from 'plant-store-client'\n${JS_EXAMPLE('esm')}` },
    tsc: false,
    entry: 'index.mjs'
  },
  commonjs: {
    files: {
      'package.json': { private: true },
      'index.cjs': `const { createPlantClient, PlantStoreError } = require('plant-store-client')\n${JS_EXAMPLE('commonjs')}`
    },
    tsc: false,
    entry: 'index.cjs'
  }
}

describe('the plant-store-client package', () => {
  it('npm pack ships the built ES module, its types, its map with the sources inside, README, licence and package.json', () => {
    expect(packed.filename).toBe('plant-store-client-1.0.0.tgz')
    expect(packed.files.map((file) => file.path).sort()).toEqual([
      'LICENSE', 'README.md', 'dist/index.d.ts', 'dist/index.js', 'dist/index.js.map', 'package.json'
    ])
    const map = JSON.parse(readFileSync(join(CLIENT, 'dist', 'index.js.map'), 'utf8')) as { sources: string[], sourcesContent?: string[] }
    expect(map.sources).toEqual(['../src/index.ts'])
    expect(map.sourcesContent).toEqual([readFileSync(join(CLIENT, 'src', 'index.ts'), 'utf8')])
  })

  describe('installed from the tarball into fresh projects', () => {
    const built: Record<string, string> = {}
    beforeAll(async () => {
      await Promise.all(Object.entries(projects).map(async ([name, { files, tsc }]) => {
        built[name] = await project(name, files)
        // tsc writes its errors on stdout: the failure shows them.
        // A loaded machine may take a minute or more for each of three tsc runs at once.
        if (!tsc) return
        const compiler = name === 'node10' ? TSC6 : TSC
        await run(process.execPath, [compiler, '-p', '.'], { cwd: built[name], timeout: 240000 })
          .catch((error: Error & { stdout?: string, signal?: string }) => {
            throw new Error(`${name}: ${error.message} ${error.signal ?? ''}${error.stdout ?? ''}`)
          })
      }))
    }, 400000)

    /** Runs every project's example with `node` against a built service, each with its own id; what each printed. */
    async function runAll (node: string, firstId: number): Promise<string[]> {
      const server = await startServer({})
      return Promise.all(Object.entries(projects).map(async ([name, { entry }], n) => {
        const env = { PATH: process.env.PATH, PLANT_STORE_URL: server.url, PLANT_STORE_TOKEN: E2E_TOKEN, PLANT_ID: String(firstId + n) }
        const { stdout } = await run(node, [entry], { cwd: built[name], env, timeout: 30000 })
        return stdout
      }))
    }

    const printed = Object.keys(projects).map((name) => `{"name":"${name}"} function object\n`)

    it('type-checks the TypeScript projects (node10, nodenext, bundler) and runs every example against the built service on this Node', {
      timeout: 60000
    }, async () => {
      expect(await runAll(process.execPath, 1000)).toEqual(printed)
    })

    it(`runs every example, CommonJS require included, on the oldest Node the engines field names (${manifest.engines.node})`, {
      timeout: 300000
    }, async (context) => {
      expect(oldest, 'engines.node is >=X.Y.Z').toMatch(/^\d+\.\d+\.\d+$/)
      const fetched = await run(join(ROOT, '.ci', 'node.sh'), [oldest as string], { timeout: 240000 }).catch((error: unknown) => error as Error)
      if (fetched instanceof Error) {
        if (process.env.REQUIRE_CLIENT_OLDEST_NODE === '1') throw fetched
        context.skip(`Node ${oldest} could not be fetched by .ci/node.sh (REQUIRE_CLIENT_OLDEST_NODE=1 makes this a failure): ${fetched.message}`)
      }
      const node = join((fetched as { stdout: string }).stdout.trim(), 'bin', 'node')
      expect((await run(node, ['--version'])).stdout).toBe(`v${oldest}\n`)
      expect(await runAll(node, 2000)).toEqual(printed)
    })
  })

  it('builds from its own folder alone: npm ci installs the devDependencies its lockfile names, and npm pack builds and packs', {
    timeout: 180000
  }, async () => {
    const alone = join(dir, 'client-alone')
    for (const file of ['package.json', 'package-lock.json', 'tsconfig.json', 'README.md', 'LICENSE', 'src']) {
      cpSync(join(CLIENT, file), join(alone, file), { recursive: true })
    }
    await run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: alone, timeout: 120000 })
    const { stdout } = await run('npm', ['pack', '--json'], { cwd: alone, timeout: 120000 })
    const [own] = JSON.parse(stdout) as Array<typeof packed>
    expect(own?.files.map((file) => file.path).sort()).toEqual(packed.files.map((file) => file.path).sort())
    expect(readFileSync(join(alone, 'dist', 'index.js'), 'utf8')).toBe(readFileSync(join(CLIENT, 'dist', 'index.js'), 'utf8'))
  })

  it('runs the examples of docs/api.md and client/README.md from the tarball against the built service, type-checked against the packed types', {
    timeout: 60000
  }, async () => {
    const app = join(dir, 'app')
    const installed = join(app, 'node_modules', 'plant-store-client')
    mkdirSync(installed, { recursive: true })
    await run('tar', ['-xzf', join(dir, packed.filename), '-C', installed, '--strip-components=1'])
    const server = await startServer({})
    const examples = { 'api.mts': docBlock('docs/api.md', 'plant-store-client'), 'readme.mts': docBlock('client/README.md', 'client-readme') }
    for (const [file, example] of Object.entries(examples)) {
      // The pages' address and token are the README's; this run's are the test server's.
      expect(example, file).toContain('\'http://127.0.0.1:3000\'')
      expect(example, file).toContain('\'change-me-to-a-long-secret\'')
      writeFileSync(join(app, file), example.replace('http://127.0.0.1:3000', server.url).replace('change-me-to-a-long-secret', E2E_TOKEN))
    }

    await run(process.execPath, [TSC, '--noEmit', '--strict', '--target', 'es2023', '--module', 'nodenext', '--moduleResolution', 'nodenext',
      '--types', 'node', '--typeRoots', join(ROOT, 'node_modules', '@types'), ...Object.keys(examples)], { cwd: app, timeout: 60000 })

    const api = await run(process.execPath, ['api.mts'], { cwd: app, timeout: 30000 })
    expect(api.stdout).toBe("{ name: 'Monstera', tag: 'tropical' }\n" +
      'conflict 409 a plant with id 9007199254740993 already exists with another name or tag\n')
    // The same plant again: a replay, answered with the stored plant.
    const readme = await run(process.execPath, ['readme.mts'], { cwd: app, timeout: 30000 })
    expect(readme.stdout).toBe("{ name: 'Monstera', tag: 'tropical' }\n")
  })
})
