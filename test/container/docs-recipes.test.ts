import { execFile, execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { docBlock } from '../docs/blocks.js'
import { postOverHttp } from '../helpers.js'
import {
  baseImageUnavailable, docker, dockerResult, dockerUnavailable, GiveUp,
  machineBaseImageProbe, publishedUrl, uniqueName, waitFor, containerState
} from './docker.js'

// The `docker build` and `docker run` lines of README.md and docs/deployment.md, and the SQLite backup
// and restore of docs/production.md, run as written on a
// clean checkout of the committed files (HEAD), with the changes a shared engine needs and nothing else:
// each container detached under a name of its own, its ports published on free ports of 127.0.0.1,
// the image and the named volume named for this run, and the build on the host's network (npm reaches
// the registry through this machine's proxy on loopback). One image build. Without an engine or the
// base image it skips with the reason; REQUIRE_DOCKER=1 (CI) turns the skip into a failure.
const root = fileURLToPath(new URL('../../', import.meta.url))
const BASE = 'node:24-bookworm-slim'
const baseProbe = machineBaseImageProbe(BASE)
const unavailable = dockerUnavailable() ?? baseImageUnavailable(BASE, baseProbe)
const IMAGE = `plant-store-docs:${uniqueName('run').replace(/^run-/, '')}`
const FILE_TOKEN = 'a-token-from-the-file-0123456789'

if (unavailable !== undefined) {
  console.warn(`Docs' docker recipes skipped: ${unavailable} (install docker.io and start dockerd; ` +
    `as root, .ci/docker-base.sh builds ${BASE}; CI sets REQUIRE_DOCKER=1)`)
  if (process.env.REQUIRE_DOCKER === '1') {
    it('runs: REQUIRE_DOCKER=1 turns the skip into a failure', () => {
      expect.fail(`REQUIRE_DOCKER=1 but ${unavailable}: the docs' docker recipes would not be run`)
    })
  }
}

/** The commands of a shell block: comment lines dropped, continued lines joined. */
const commands = (block: string): string[] => block.replace(/\\\n\s*/g, '').split('\n')
  .map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'))

/** Runs a bash line to its end in `cwd`, rejecting with its output when it fails. */
const bash = (line: string, cwd: string, timeoutMs = 60000): Promise<string> => new Promise((resolve, reject) => {
  execFile('bash', ['-c', line], { cwd, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
    if (error === null) resolve(stdout.trim())
    else reject(new Error(`${line} failed: ${error.message}\n${stdout.slice(-4000)}\n${stderr.slice(-4000)}`))
  })
})

const quickStart = commands(docBlock('README.md', 'docker-quick-start'))
const deployment = commands(docBlock('docs/deployment.md', 'docker-run'))

describe.skipIf(unavailable !== undefined)(unavailable === undefined
  ? 'the docs\' docker recipes'
  : `the docs' docker recipes (skipped: ${unavailable})`, () => {
  const containers = new Set<string>()
  const volumes = new Set<string>()
  let checkout: string | undefined
  let work: string | undefined

  /** A documented `docker run` line as this test runs it on a shared engine (see the top of the file). */
  function forThisRun (line: string): { line: string, name: string } {
    const name = uniqueName('plant-store-docs')
    containers.add(name)
    const volumed = line.replace(/-v ([a-z][\w-]*):/g, (_match, volume: string) => {
      const unique = uniqueName(volume)
      volumes.add(unique)
      return `-v ${unique}:`
    })
    const rewritten = volumed
      .replace(/^docker run /, `docker run --detach --name ${name} `)
      .replace(/ --name (?!plant-store-docs-)\S+/, '')
      .replace(/-p (?:127\.0\.0\.1:)?(\d+):(\d+)/g, '-p 127.0.0.1::$2')
      .replace(/ plant-store$/, ` ${IMAGE}`)
    return { line: rewritten, name }
  }

  beforeAll(async () => {
    checkout = mkdtempSync(join(tmpdir(), 'plant-store-docs-image-'))
    execFileSync('bash', ['-c', 'git -C "$1" archive --format=tar HEAD | tar -x -C "$2"', '_', root, checkout])
    if (baseProbe.buildable()) await bash(join(checkout, '.ci', 'docker-base.sh'), checkout, 900000)
    // The one build: the README's line, which docs/deployment.md repeats.
    expect(deployment[0]).toBe(quickStart[0])
    const build = (quickStart[0] ?? '').replace(/^docker build /, 'docker build --network host ').replace(/-t plant-store /, `-t ${IMAGE} `)
    expect(build).toBe(`docker build --network host -t ${IMAGE} .`)
    await bash(build, checkout, 900000)
    // $PWD of the tokens-file line: a directory holding secrets/tokens, readable by uid 1000.
    work = mkdtempSync(join(tmpdir(), 'plant-store-docs-run-'))
    mkdirSync(join(work, 'secrets'))
    writeFileSync(join(work, 'secrets', 'tokens'), `${FILE_TOKEN}\n`)
    chmodSync(work, 0o755)
    chmodSync(join(work, 'secrets'), 0o755)
    chmodSync(join(work, 'secrets', 'tokens'), 0o644)
  }, 1800000)

  afterAll(async () => {
    for (const name of containers) await dockerResult(['rm', '--force', '--volumes', name])
    for (const volume of volumes) await dockerResult(['volume', 'rm', '--force', volume])
    await dockerResult(['image', 'rm', IMAGE])
    for (const dir of [checkout, work]) if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  }, 120000)

  it.each([...quickStart.slice(1), ...deployment.slice(1)])('%s: starts, gets ready and stores a plant with its token', async (documented) => {
    const { line, name } = forThisRun(documented)
    await bash(line, work ?? root)
    try {
      const api = await publishedUrl(name, 3000)
      await waitFor(`container ${name} ready`, async () => {
        const state = await containerState(name)
        if (!state.Running) throw new GiveUp(`container ${name} exited ${state.ExitCode}: ${(await dockerResult(['logs', name])).stderr}`)
        return (await fetch(`${api}/readyz`)).status === 200 ? true : undefined
      }, 30000)
      const token = /API_TOKENS=(\S+)/.exec(line)?.[1] ?? FILE_TOKEN
      const reply = await postOverHttp(api, token, '{"id":1,"name":"Monstera"}')
      expect([reply.status, await reply.json()]).toEqual([200, { name: 'Monstera' }])
      if (line.includes('sqlite:/data/plants.db')) await docker(['exec', name, 'test', '-s', '/data/plants.db'])
      if (line.includes('::9464')) {
        const scrape = await fetch(`${await publishedUrl(name, 9464)}/metrics`)
        expect(scrape.status).toBe(200)
        expect(await scrape.text()).toMatch(/^plant_store_inserts_total\{outcome="created"\} 1$/m)
      }
    } finally {
      await dockerResult(['rm', '--force', '--volumes', name])
    }
  }, 90000)

  it('backup-sqlite-docker while the service serves, restore-sqlite-docker with it stopped: verified; it then replays an old plant and stores new ones',
    async () => {
      const volume = uniqueName('plant-data')
      const name = uniqueName('plant-store-docs')
      volumes.add(volume)
      containers.add(name)
      const folder = mkdtempSync(join(tmpdir(), 'plant-store-docs-backup-'))
      const forThisTest = (block: string): string => 'set -euo pipefail\n' + block
        .replace(/plant-data:/g, `${volume}:`)
        .replace(/(--entrypoint \S+) plant-store\b/g, `$1 ${IMAGE}`)
        .replace(/^docker (stop|start) plants$/gm, `docker $1 ${name}`)
      const create = async (body: string): Promise<[number, unknown]> => {
        const reply = await postOverHttp(await publishedUrl(name, 3000), FILE_TOKEN, body)
        return [reply.status, await reply.json()]
      }
      const ready = (): Promise<boolean> => waitFor(`container ${name} ready`, async () => {
        const state = await containerState(name)
        if (!state.Running) throw new GiveUp(`container ${name} exited ${state.ExitCode}: ${(await dockerResult(['logs', name])).stderr}`)
        return (await fetch(`${await publishedUrl(name, 3000)}/readyz`)).status === 200 ? true : undefined
      }, 30000)
      try {
        await bash(`docker run -d --name ${name} -p 127.0.0.1::3000 -e API_TOKENS=${FILE_TOKEN} ` +
          `-e DATABASE_URL=sqlite:/data/plants.db -v ${volume}:/data ${IMAGE}`, folder)
        await ready()
        expect(await create('{"id":1,"name":"Monstera"}')).toEqual([200, { name: 'Monstera' }])

        await bash(forThisTest(docBlock('docs/production.md', 'backup-sqlite-docker')), folder, 120000)
        expect(readFileSync(join(folder, 'backups', 'plants.jsonl'), 'utf8')).toBe('{"id":1,"name":"Monstera"}\n')
        expect(readFileSync(join(folder, 'backups', 'plants.db')).subarray(0, 15).toString()).toBe('SQLite format 3')
        expect(existsSync(join(folder, 'backups', 'plants.db.partial'))).toBe(false)
        await docker(['exec', name, 'test', '!', '-e', '/data/backups']) // nothing written into the live volume
        expect((await create('{"id":2,"name":"after the backup"}'))[0]).toBe(200)

        const restore = await bash(forThisTest(docBlock('docs/production.md', 'restore-sqlite-docker')), folder, 120000)
        expect(restore).toMatch(/identical 1, missing 0, differing 0, refused 0/)
        await ready()
        expect(await create('{"id":1,"name":"Monstera"}')).toEqual([200, { name: 'Monstera' }])
        // Plant 2 came after the backup: the restored store has never seen it.
        expect(await create('{"id":2,"name":"another name"}')).toEqual([200, { name: 'another name' }])
        expect(await create('{"id":3,"name":"Pilea"}')).toEqual([200, { name: 'Pilea' }])
      } finally {
        await dockerResult(['rm', '--force', name])
        rmSync(folder, { recursive: true, force: true })
      }
    }, 300000)
})
