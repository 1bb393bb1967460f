import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { docBlock } from '../docs/blocks.js'
import { E2E_TOKEN } from '../e2e/server-process.js'
import { createUntilDead, mapConcurrently, postPlant } from '../e2e/storage-process.js'
import { postOverHttp } from '../helpers.js'
import {
  baseImageUnavailable, containerState, docker, dockerResult, dockerUnavailable, GiveUp, machineBaseImageProbe, publishedUrl, uniqueName,
  waitFor
} from './docker.js'

// The Docker image as users deploy it, built from a clean checkout of the committed files (HEAD) on
// the local stand-in for node:24-bookworm-slim that .ci/docker-base.sh builds (no registry answers
// here), then run with a real engine. Without an engine, or without that base image where it can be
// neither built (.ci/docker-base.sh needs root and debootstrap) nor pulled, it skips with the reason
// printed; REQUIRE_DOCKER=1 (CI) turns the skip into a failure.
const root = fileURLToPath(new URL('../../', import.meta.url))
const BASE = 'node:24-bookworm-slim'
const baseProbe = machineBaseImageProbe(BASE)
const unavailable = dockerUnavailable() ?? baseImageUnavailable(BASE, baseProbe)
const required = process.env.REQUIRE_DOCKER === '1'
const IMAGE = `plant-store-test:${uniqueName('run').replace(/^run-/, '')}`
const MB = 1000 * 1000 // docker reports sizes in decimal megabytes

if (unavailable !== undefined) {
  // The file-level summary only says "skipped": say why where a person reads the run.
  console.warn(`Container tests skipped: ${unavailable} (install docker.io and start dockerd; as root, .ci/docker-base.sh builds ${BASE}; CI sets ` +
    'REQUIRE_DOCKER=1)')
  if (required) {
    it('runs: REQUIRE_DOCKER=1 turns the skip into a failure', () => {
      expect.fail(`REQUIRE_DOCKER=1 but ${unavailable}: the container tests would be skipped`)
    })
  }
}

const git = (...args: string[]): string => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8' }).trim()
/** Runs a program to its end, rejecting with its output when it fails. */
const runToEnd = (command: string, args: string[], timeoutMs: number): Promise<string> => new Promise((resolve, reject) => {
  execFile(command, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
    if (error === null) resolve(stdout)
    else reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout.slice(-4000)}\n${stderr.slice(-4000)}`))
  })
})

/**
 * A container's memory as its cgroup counts it, read on the host (cgroup v1 or v2, cgroupfs or
 * systemd driver): `usage`, what the OOM killer compares with the limit (page cache included, so
 * it sits near the limit once files were read), and `anon`, the processes' own memory.
 * `docker stats` (usage only) where no cgroup file is readable.
 */
async function containerMemory (id: string): Promise<{ usage: number, anon?: number } | undefined> {
  const read = (file: string): string | undefined => { try { return readFileSync(file, 'latin1') } catch { return undefined } }
  for (const [dir, usageFile, anonKey] of [
    [`/sys/fs/cgroup/memory/docker/${id}`, 'memory.usage_in_bytes', 'total_rss'],
    [`/sys/fs/cgroup/memory/system.slice/docker-${id}.scope`, 'memory.usage_in_bytes', 'total_rss'],
    [`/sys/fs/cgroup/docker/${id}`, 'memory.current', 'anon'],
    [`/sys/fs/cgroup/system.slice/docker-${id}.scope`, 'memory.current', 'anon']
  ] as const) {
    const usage = read(`${dir}/${usageFile}`)
    if (usage === undefined) continue
    const anon = new RegExp(`^${anonKey} (\\d+)$`, 'm').exec(read(`${dir}/memory.stat`) ?? '')?.[1]
    return { usage: Number(usage.trim()), ...(anon === undefined ? {} : { anon: Number(anon) }) }
  }
  const { stdout } = await dockerResult(['stats', '--no-stream', '--format', '{{.MemUsage}}', id])
  const match = /^([\d.]+)([KMG]i?B)/.exec(stdout.trim())
  if (match === null) return undefined
  const unit = { KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, KB: 1e3, MB: 1e6, GB: 1e9 }[match[2] as string] ?? 1
  return { usage: Number(match[1]) * unit }
}

describe.skipIf(unavailable !== undefined)(unavailable === undefined ? 'the Docker image' : `the Docker image (skipped: ${unavailable})`, () => {
  const containers = new Set<string>()
  const volumes = new Set<string>()
  // Set in beforeAll: collecting a skipped suite must leave nothing behind and need no git.
  let checkout: string | undefined
  let revision = ''
  let source = ''

  beforeAll(async () => {
    revision = git('rev-parse', 'HEAD')
    try { source = git('remote', 'get-url', 'origin') } catch { source = `file://${root}` }
    checkout = mkdtempSync(join(tmpdir(), 'plant-store-image-'))
    // Only committed files count: what a user's `git clone` would build.
    execFileSync('bash', ['-c', 'git -C "$1" archive --format=tar HEAD | tar -x -C "$2"', '_', root, checkout])
    // Built (or refreshed) where it can be; elsewhere the image found on the engine is used as it is.
    if (baseProbe.buildable()) await runToEnd('bash', [join(checkout, '.ci', 'docker-base.sh')], 900000)
    const started = Date.now()
    // --network host: npm in the build reaches the registry through this machine's proxy on loopback.
    await runToEnd('docker', ['build', '--network', 'host', '--build-arg', `REVISION=${revision}`, '--build-arg', `SOURCE=${source}`, '-t', IMAGE,
      checkout], 900000)
    console.info(`container tests: built ${IMAGE} from ${revision.slice(0, 12)} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  }, 1800000)

  afterAll(async () => {
    // -v: any anonymous volume goes with its container (the image declares none; see the VOLUME test).
    for (const id of containers) await dockerResult(['rm', '--force', '--volumes', id])
    for (const volume of volumes) await dockerResult(['volume', 'rm', '--force', volume])
    await dockerResult(['image', 'rm', IMAGE])
    if (checkout !== undefined) rmSync(checkout, { recursive: true, force: true })
  }, 120000)

  /** Starts the image detached with the API and metrics ports published on 127.0.0.1; waits for /readyz. */
  async function startContainer (args: string[] = [], { token = true }: { token?: boolean } = {}): Promise<{ id: string, api: string, metrics: string }> {
    const name = uniqueName('plant-store-test')
    containers.add(name)
    const id = await docker(['run', '--detach', '--name', name, '--publish', '127.0.0.1::3000', '--publish', '127.0.0.1::9464',
      ...(token ? ['--env', `API_TOKENS=${E2E_TOKEN}`] : []), ...args, IMAGE])
    const api = await publishedUrl(id, 3000)
    await waitFor(`container ${name} ready`, async () => {
      const state = await containerState(id)
      if (!state.Running) throw new GiveUp(`container ${name} exited ${state.ExitCode}: ${(await dockerResult(['logs', id])).stderr}`)
      return (await fetch(`${api}/readyz`)).status === 200 ? true : undefined
    }, 20000)
    return { id, api, metrics: await publishedUrl(id, 9464) }
  }

  /** POST /plants with this JSON text; `null` sends no Authorization header. */
  const post = (api: string, body: string, token: string | null = E2E_TOKEN): Promise<Response> => postOverHttp(api, token, body)

  describe('one container, default settings', () => {
    let main: { id: string, api: string, metrics: string }
    beforeAll(async () => { main = await startContainer() }, 60000)

    it('answers the contract over a published port: 200, replay 200, 409, 400, 401', async () => {
      const first = await post(main.api, '{"id":1,"name":"Monstera","tag":"tropical"}')
      expect([first.status, await first.json()]).toEqual([200, { name: 'Monstera', tag: 'tropical' }])
      const replay = await post(main.api, '{"id":1,"name":"Monstera","tag":"tropical"}')
      expect([replay.status, await replay.json()]).toEqual([200, { name: 'Monstera', tag: 'tropical' }])
      const conflict = await post(main.api, '{"id":1,"name":"Fern"}')
      expect([conflict.status, await conflict.json()]).toEqual([409, { error: 409, message: 'a plant with id 1 already exists with another name or tag' }])
      const bad = await post(main.api, '{"id":"1","name":"Fern"}')
      expect([bad.status, await bad.json()]).toEqual([400, {
        error: 400,
        message: 'body/id must be an integer between -9223372036854775808 and 9223372036854775807'
      }])
      const anonymous = await post(main.api, '{"id":2,"name":"Fern"}', null)
      expect(anonymous.status).toBe(401)
      expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="plants"')
      expect(((await anonymous.json()) as { error: number }).error).toBe(401)
    })

    it('serves /metrics on METRICS_PORT (9464) only; the API port answers 404 for it', async () => {
      expect((await post(main.api, '{"id":3,"name":"Ivy"}')).status).toBe(200)
      const scrape = await fetch(`${main.metrics}/metrics`)
      expect(scrape.status).toBe(200)
      expect(await scrape.text()).toMatch(/^plant_store_inserts_total\{outcome="created"\} [1-9]\d*$/m)
      const onApi = await fetch(`${main.api}/metrics`, { headers: { authorization: `Bearer ${E2E_TOKEN}` } })
      expect(onApi.status).toBe(404)
    })

    it('runs tini as PID 1 and node as its only child, both under uid 1000 (the node user), not root', async () => {
      const cmdline = async (pid: string) => (await docker(['exec', main.id, 'cat', `/proc/${pid}/cmdline`])).split('\0').filter(Boolean)
      expect(await cmdline('1')).toEqual(['tini', '--', 'node', 'dist/server.js'])
      const children = (await docker(['exec', main.id, 'cat', '/proc/1/task/1/children'])).split(' ').filter(Boolean)
      expect(children).toHaveLength(1)
      expect(await cmdline(children[0] as string)).toEqual(['node', 'dist/server.js'])
      for (const pid of ['1', children[0] as string]) {
        const status = await docker(['exec', main.id, 'cat', `/proc/${pid}/status`])
        expect(status).toMatch(/^Uid:\s+1000\s+1000\s+1000\s+1000$/m)
        expect(status).toMatch(/^Gid:\s+1000\s+1000\s+1000\s+1000$/m)
      }
    })

    it('writes one JSON access line per request on stdout, nothing on stderr, no token', async () => {
      const reply = await postOverHttp(main.api, E2E_TOKEN, '{"id":4,"name":"Aloe"}', { 'x-request-id': 'container-log-check' })
      expect(reply.status).toBe(200)
      // The line is written at the end of the event-loop turn that answered: wait for it to arrive.
      const { stdout, stderr } = await waitFor('the access line in docker logs', async () => {
        const logs = await dockerResult(['logs', main.id])
        return logs.stdout.includes('container-log-check') ? logs : undefined
      }, 5000)
      expect(stderr).toBe('')
      const lines = stdout.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>)
      expect(lines.filter((line) => line.reqId === 'container-log-check')).toEqual([expect.objectContaining({
        msg: 'request', method: 'POST', route: '/plants', status: 200, level: 30, reqId: 'container-log-check'
      })])
      expect(stdout).not.toContain(E2E_TOKEN)
    })

    it('reports healthy through its own HEALTHCHECK', async () => {
      // Docker runs the first probe one interval (10 s) after the start.
      const health = await waitFor('HEALTHCHECK healthy', async () => {
        const state = await containerState(main.id)
        if (state.Health?.Status === 'unhealthy') throw new Error(`unhealthy: ${JSON.stringify(state.Health.Log)}`)
        return state.Health?.Status === 'healthy' ? state.Health : undefined
      }, 30000)
      expect(health.Log.length).toBeGreaterThan(0)
      expect(health.Log.filter((probe) => probe.ExitCode !== 0)).toEqual([])
    }, 40000)
  })

  // How long docker stop takes is a figure of the bench (bench/start-time.js: ≤ SHUTDOWN_DELAY_MS + 3 s),
  // not a threshold here: this checks that it ends by the service's own exit, not Docker's SIGKILL.
  it('stops on SIGTERM (docker stop) with exit 0: not ready for SHUTDOWN_DELAY_MS, then the drain, logged in that order', { timeout: 30000 }, async () => {
    const { id, api } = await startContainer()
    expect((await post(api, '{"id":1,"name":"Fern"}')).status).toBe(200)
    await docker(['stop', '--time', '10', id])
    const state = await containerState(id)
    expect({ exitCode: state.ExitCode, oomKilled: state.OOMKilled }).toEqual({ exitCode: 0, oomKilled: false })
    const lines = (await docker(['logs', id])).split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as {
      msg: string,
      signal?: string,
      delayMs?: number
    })
    const shutdown = lines.filter((line) => line.signal !== undefined)
    expect(shutdown).toEqual([
      expect.objectContaining({ msg: 'not ready: serving for SHUTDOWN_DELAY_MS, then closing', signal: 'SIGTERM', delayMs: 2000 }),
      expect.objectContaining({ msg: 'closing', signal: 'SIGTERM' })
    ])
  })

  it('keeps every acknowledged plant in SQLite on a named volume through concurrent load and docker kill', { timeout: 120000 }, async () => {
    const volume = uniqueName('plant-store-test-data')
    volumes.add(volume)
    await docker(['volume', 'create', volume])
    const sqlite = ['--env', 'DATABASE_URL=sqlite:/data/plants.db', '--volume', `${volume}:/data`]
    const first = await startContainer(sqlite)

    // 32 clients send new plants until 1,000 are acknowledged; then docker kill (SIGKILL) lands while
    // they are still sending (a container that had already died, e.g. by the GC abort of
    // better-sqlite3 < 13, fails the kill). Ids above 2^53 as well, as the e2e test does.
    const { acknowledged, unanswered } = await createUntilDead(first.api, 1000, 32, (n) => n % 2 === 0 ? BigInt(n) : 2n ** 62n + BigInt(n),
      async () => { await docker(['kill', '--signal', 'KILL', first.id]) })
    const killed = await containerState(first.id)
    expect({ running: killed.Running, exitCode: killed.ExitCode, oomKilled: killed.OOMKilled }).toEqual({ running: false, exitCode: 137, oomKilled: false })
    expect(unanswered).toBeGreaterThan(0) // the kill came with requests in flight
    expect(acknowledged.length).toBeGreaterThanOrEqual(1000)
    console.info(`container tests: SQLite: ${acknowledged.length} plants acknowledged, ${unanswered} requests cut by docker kill`)

    const second = await startContainer(sqlite)
    const replays = await mapConcurrently(acknowledged, 32, (id) => postPlant(second.api, id, `plant ${id}`))
    expect(replays.filter((reply) => reply.status !== 200)).toEqual([])
    expect(replays.map((reply) => reply.body)).toEqual(acknowledged.map((id) => ({ name: `plant ${id}` })))
    const changed = await mapConcurrently(acknowledged, 32, async (id) => (await postPlant(second.api, id, `other ${id}`)).status)
    expect(changed.filter((status) => status !== 409)).toEqual([])
  })

  it('serves from a read-only root filesystem (--read-only --tmpfs /tmp), SQLite on a named volume at /data', async () => {
    const volume = uniqueName('plant-store-test-ro')
    volumes.add(volume)
    const { id, api } = await startContainer(['--read-only', '--tmpfs', '/tmp', '--volume', `${volume}:/data`, '--env', 'DATABASE_URL=sqlite:/data/plants.db'])
    expect((await post(api, '{"id":1,"name":"Fern"}')).status).toBe(200)
    expect((await post(api, '{"id":1,"name":"Fern"}')).status).toBe(200)
    // The flag is really in force: the root refuses a write, even one the node user could make elsewhere.
    const write = await dockerResult(['exec', id, 'touch', '/home/node/probe'])
    expect(write.code).not.toBe(0)
    expect(write.stderr).toContain('Read-only file system')
  })

  // Node as PID 1 survived its own abort: the container stayed running at full CPU, answering nothing.
  it('ends on a fatal error: a V8 heap out of memory under load exits the container (134), never a mute running process', { timeout: 300000 }, async () => {
    // A heap smaller than the plants sent, no shedding on heap use, a MAX_PLANTS beyond it (no memory
    // limit, so it is allowed): new plants until V8 gives up, as a 1,000,000 under 96 MiB once did.
    const { id, api } = await startContainer(['--env', 'NODE_OPTIONS=--max-old-space-size=32 --max-semi-space-size=1',
      '--env', 'MAX_HEAP_USED_BYTES=0', '--env', 'MAX_PLANTS=1000000'])
    const address = await docker(['inspect', '--format', '{{.NetworkSettings.IPAddress}}', id])
    const url = address === '' ? api : `http://${address}:3000`
    const name = 'p'.repeat(512)
    let next = 0
    let exited = false
    const writers = Array.from({ length: 16 }, async () => {
      while (!exited) {
        // A refused or cut request is expected as the process dies: what counts is the container's state.
        await post(url, `{"id":${++next},"name":"${name}"}`).then(async (reply) => reply.arrayBuffer()).catch(() => undefined)
      }
    })
    const state = await waitFor('the container to exit', async () => {
      await new Promise((resolve) => setTimeout(resolve, 500))
      const now = await containerState(id)
      return now.Running ? undefined : now
    }, 240000).finally(() => { exited = true })
    await Promise.all(writers)
    console.info(`container tests: heap out of memory after about ${next} requests, exit ${state.ExitCode}`)
    expect({ running: state.Running, exitCode: state.ExitCode, oomKilled: state.OOMKilled }).toEqual({ running: false, exitCode: 134, oomKilled: false })
    expect((await dockerResult(['logs', id])).stderr).toContain('JavaScript heap out of memory')
  })

  it('with --memory 96m and MAX_PLANTS=1000000 (more than one plant per 8 KiB of the limit) exits 1 with one line naming both', async () => {
    const result = await dockerResult(['run', '--rm', '--memory', '96m', '--memory-swap', '96m',
      '--env', `API_TOKENS=${E2E_TOKEN}`, '--env', 'MAX_PLANTS=1000000', IMAGE])
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr: 'plant-store: MAX_PLANTS (1000000) is more than the memory limit (96 MiB) holds: at most 12288, one plant per 8 KiB of it\n'
    })
  })

  it('rotates tokens as docs/production.md does (the directory mounted, the file renamed over, SIGHUP): the new token accepted, then the old one refused', {
    timeout: 60000
  }, async () => {
    const name = uniqueName('plant-store-test')
    containers.add(name)
    const [token, newToken] = ['rotation-old-token-0123456789', 'rotation-new-token-0123456789']
    /** A block of the page as written, but for the names a shared engine needs; each must be there to replace. */
    const recipe = (block: string, replacements: [string, string][]) => replacements.reduce((text, [from, to]) => {
      expect(text, 'a block of docs/production.md').toContain(from)
      return text.replaceAll(from, to)
    }, block)
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-rotate-'))
    const sh = (text: string) => new Promise<void>((resolve, reject) => {
      execFile('bash', ['-euc', text], { cwd: dir, env: { ...process.env, TOKEN: token, NEW_TOKEN: newToken }, timeout: 30000 }, (error, _stdout, stderr) => {
        if (error === null) resolve()
        else reject(new Error(`${text}\nfailed: ${error.message}\n${stderr}`))
      })
    })
    try {
      await sh(recipe(docBlock('docs/production.md', 'docker-tokens-directory'),
        [['--name plants', `--name ${name}`], ['-p 3000:3000', '-p 127.0.0.1::3000'], [' plant-store\n', ` ${IMAGE}\n`]]))
      const api = await publishedUrl(name, 3000)
      await waitFor('the container ready', async () => (await fetch(`${api}/readyz`)).status === 200 ? true : undefined, 20000)
      const statuses = async () => Promise.all([token, newToken].map(async (bearer, i) => (await post(api, `{"id":${i + 1},"name":"Fern"}`, bearer)).status))
      expect(await statuses()).toEqual([200, 401])
      const reloaded = (count: number) => waitFor(`"tokens reloaded" with ${count}`, async () =>
        (await docker(['logs', name])).split('\n').some((line) => line.includes('"msg":"tokens reloaded"') && line.includes(`"tokens":${count}`))
          ? true
          : undefined, 10000)

      await sh(recipe(docBlock('docs/production.md', 'rotate-tokens-docker'), [['HUP plants', `HUP ${name}`]]))
      await reloaded(2)
      expect(await statuses()).toEqual([200, 200])
      await sh(recipe(docBlock('docs/production.md', 'retire-token-docker'), [['HUP plants', `HUP ${name}`]]))
      await reloaded(1)
      expect(await statuses()).toEqual([401, 200])
      expect((await containerState(name)).Running).toBe(true)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('without a token (no API_TOKENS) exits 1 with one clear line', async () => {
    const result = await dockerResult(['run', '--rm', IMAGE])
    expect(result.code).toBe(1)
    expect(result.stderr).toBe('plant-store: API_TOKENS: at least one bearer token is required (API_TOKENS or API_TOKENS_FILE); the service never runs open\n')
    expect(result.stdout).toBe('')
  })

  it('adds at most 50 MB of layers to node:24-bookworm-slim', async () => {
    const [imageSize, baseSize] = (await docker(['image', 'inspect', '--format', '{{.Size}}', IMAGE, BASE])).split('\n').map(Number)
    const added = (imageSize ?? 0) - (baseSize ?? Infinity)
    console.info(`container tests: the image adds ${(added / MB).toFixed(1)} MB to ${BASE}`)
    expect(added).toBeGreaterThan(0)
    expect(added).toBeLessThanOrEqual(50 * MB)
  })

  it('declares no VOLUME (the memory and PostgreSQL stores write nothing; SQLite users mount one with -v)', async () => {
    expect(await docker(['image', 'inspect', '--format', '{{json .Config.Volumes}}', IMAGE])).toBe('null')
  })

  describe('rebuilds lean', () => {
    const rebuilt = new Set<string>()
    afterAll(async () => {
      for (const image of rebuilt) await dockerResult(['image', 'rm', image])
    }, 60000)

    /** Builds `dir` as a new tag with the suite's build arguments (or `revisionArg`); returns the tag. */
    async function rebuild (dir: string, revisionArg = revision): Promise<string> {
      const tag = `${IMAGE}-${rebuilt.size + 1}`
      rebuilt.add(tag)
      await runToEnd('docker', ['build', '--network', 'host', '--build-arg', `REVISION=${revisionArg}`, '--build-arg', `SOURCE=${source}`, '-t', tag,
        dir], 900000)
      return tag
    }
    const layersOf = async (image: string): Promise<string[]> => JSON.parse(await docker(['image', 'inspect', '--format', '{{json .RootFS.Layers}}',
      image])) as string[]

    /** The uncompressed bytes of the layers `image` has beyond those it shares with the suite's image: what a push ships. */
    async function newLayerBytes (image: string): Promise<{ bytes: number, layers: number }> {
      const [before, after] = [await layersOf(IMAGE), await layersOf(image)]
      let shared = 0
      while (shared < before.length && before[shared] === after[shared]) shared++
      const dir = mkdtempSync(join(tmpdir(), 'plant-store-save-'))
      try {
        const archive = join(dir, 'image.tar')
        await docker(['save', '--output', archive, image], { timeoutMs: 300000 })
        // manifest.json lists the layer files base first, in the order of RootFS.Layers.
        const manifest = JSON.parse(execFileSync('tar', ['-xOf', archive, 'manifest.json'], { encoding: 'utf8' })) as [{ Layers: string[] }]
        const sizes = new Map(execFileSync('tar', ['-tvf', archive], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }).split('\n')
          .map((line) => /^\S+\s+\S+\s+(\d+)\s+\S+\s+\S+\s+(.+)$/.exec(line)).filter((match) => match !== null)
          .map((match) => [match[2] ?? '', Number(match[1])]))
        const fresh = manifest[0].Layers.slice(shared)
        return { bytes: fresh.reduce((sum, file) => sum + (sizes.get(file) ?? Number.NaN), 0), layers: fresh.length }
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }

    it('after a one-line change in one src/ file, ships at most 5 MB of new layers (dist/ and its compile cache; node_modules is reused)',
      { timeout: 900000 }, async () => {
        if (checkout === undefined) throw new Error('no checkout')
        const changed = mkdtempSync(join(tmpdir(), 'plant-store-image-changed-'))
        try {
          execFileSync('cp', ['-a', `${checkout}/.`, changed])
          const file = join(changed, 'src', 'routes', 'health.ts')
          const text = readFileSync(file, 'utf8')
          const edited = text.replace("'The process is up'", "'The process is up and answers'")
          expect(edited).not.toBe(text)
          writeFileSync(file, edited)
          const image = await rebuild(changed)
          const { bytes, layers } = await newLayerBytes(image)
          console.info(`container tests: a one-line source change ships ${layers} new layers, ${(bytes / MB).toFixed(2)} MB`)
          expect(layers).toBeGreaterThan(0)
          expect(bytes).toBeGreaterThan(0)
          expect(bytes).toBeLessThanOrEqual(5 * MB)
        } finally {
          rmSync(changed, { recursive: true, force: true })
        }
      })

    it('with only another REVISION build argument, reuses every layer (the labels come last)', { timeout: 900000 }, async () => {
      if (checkout === undefined) throw new Error('no checkout')
      const image = await rebuild(checkout, `${revision}-other`)
      expect(await layersOf(image)).toEqual(await layersOf(IMAGE))
      const labels = JSON.parse(await docker(['image', 'inspect', '--format', '{{json .Config.Labels}}', image])) as Record<string, string>
      expect(labels['org.opencontainers.image.revision']).toBe(`${revision}-other`)
    })
  })

  it('carries the OCI labels: source, version (package.json\'s), revision, licence', async () => {
    const labels = JSON.parse(await docker(['image', 'inspect', '--format', '{{json .Config.Labels}}', IMAGE])) as Record<string, string>
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }
    expect(labels).toMatchObject({
      'org.opencontainers.image.source': source,
      'org.opencontainers.image.version': version,
      'org.opencontainers.image.revision': revision,
      'org.opencontainers.image.licenses': 'MIT'
    })
  })

  it('ships a CycloneDX SBOM of the production dependencies at /app/sbom.cdx.json', async () => {
    const sbom = JSON.parse(await docker(['run', '--rm', '--entrypoint', 'cat', IMAGE, '/app/sbom.cdx.json'])) as {
      bomFormat: string,
      components: { name: string, version: string }[]
    }
    expect(sbom.bomFormat).toBe('CycloneDX')
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> }
    const versionOf = (name: string): string | undefined => sbom.components.find((component) => component.name === name)?.version
    expect(versionOf('fastify')).toBe(lock.packages['node_modules/fastify']?.version)
    expect(versionOf('better-sqlite3')).toBe(lock.packages['node_modules/better-sqlite3']?.version)
    // Production only: no dev tool is listed.
    expect(versionOf('vitest')).toBeUndefined()
    expect(versionOf('typescript')).toBeUndefined()
  })

  // Creates succeed after the burst; the last answers are all 507 (full, not shed); memory is sampled throughout.
  it('with --memory 96m: no 507 for a burst storing nothing, then plants until full and 60 s on: never OOM-killed, only 200/503/507, at the end all 507', {
    timeout: 300000
  }, async () => {
    // MAX_PLANTS unset: its default follows the memory limit (one plant per 8 KiB of it).
    const { id, api } = await startContainer(['--memory', '96m', '--memory-swap', '96m'])
    // The container's own address on Docker's bridge: the load reaches the service without the
    // userland proxy of the published port.
    const address = await docker(['inspect', '--format', '{{.NetworkSettings.IPAddress}}', id])
    const url = address === '' ? api : `http://${address}:3000`
    const load = async (args: string[], timeoutMs: number) => JSON.parse(await runToEnd(process.execPath, [join(root, 'test', 'container',
      'fill-until-full.mjs'), url, E2E_TOKEN, ...args], timeoutMs)) as {
      requests: number,
      statuses: Record<string, number>,
      full: boolean,
      secondsAfterFull: number,
      secondsToFull: number | null,
      lastStatuses: number[],
      p99Ms: number,
      errors: number,
      timeouts: number
    }
    // The container's memory (its cgroup's usage, as the OOM killer sees it), every 500 ms throughout.
    const samples: { usage: number, anon?: number }[] = []
    const sampler = setInterval(() => { void containerMemory(id).then((sample) => { if (sample !== undefined) samples.push(sample) }) }, 500)
    const MiB = (bytes: number) => Math.round(bytes / 2 ** 10) / 2 ** 10
    const peak = () => ({
      samples: samples.length,
      usageMiB: MiB(Math.max(...samples.map((s) => s.usage))),
      anonMiB: MiB(Math.max(0,
        ...samples.map((s) => s.anon ?? 0)))
    })
    try {
      // 1. A burst that stores nothing new (64 connections replaying a 16 kB plant for 15 s): shed
      // with 503 while memory is short, never a 507; afterwards a new plant is taken.
      const burst = await load(['burst', '15'], 60000)
      console.info(`container tests: --memory 96m, burst: ${JSON.stringify({ ...burst, memory: peak() })}`)
      expect({ errors: burst.errors, timeouts: burst.timeouts }).toEqual({ errors: 0, timeouts: 0 })
      expect(Object.keys(burst.statuses).filter((status) => status !== '200' && status !== '503')).toEqual([])
      await waitFor('a create after the burst', async () => {
        const res = await postOverHttp(api, E2E_TOKEN, '{"id":2,"name":"after the burst"}')
        // A 503 (pressure still measured) is retried; a 507 would say full, for what was load.
        if (res.status === 507) throw new GiveUp('507 after a burst that stored nothing')
        return res.status === 200 ? true : undefined
      }, 10000)

      // 2. New plants until the store is full, then 60 s more of them.
      const fill = await load(['fill', '90', '60'], 240000)
      console.info(`container tests: --memory 96m, fill and 60 s past full: ${JSON.stringify({ ...fill, memory: peak() })}`)
      const state = await containerState(id)
      expect({ running: state.Running, oomKilled: state.OOMKilled, exitCode: state.ExitCode }).toEqual({ running: true, oomKilled: false, exitCode: 0 })
      expect({ errors: fill.errors, timeouts: fill.timeouts }).toEqual({ errors: 0, timeouts: 0 })
      // The plants filled the store (a 507 within 90 s) and the load went on for 60 s past it.
      expect(fill.full).toBe(true)
      expect(fill.secondsAfterFull).toBeGreaterThanOrEqual(59)
      expect(Object.keys(fill.statuses).filter((status) => !['200', '503', '507'].includes(status))).toEqual([])
      // The last 500 answers are all 507: what fills the store is plants, and the load past full is
      // answered "full", not shed as memory pressure (503) by what the burst and the load left behind.
      expect(fill.lastStatuses).toEqual([507])
    } finally {
      clearInterval(sampler)
    }
    // Sampled all through (about 2 a second); the processes' own memory stayed under the limit.
    expect(samples.length).toBeGreaterThan(100)
    expect(Math.max(...samples.map((s) => s.anon ?? 0))).toBeLessThan(96 * 2 ** 20)
  })
})
