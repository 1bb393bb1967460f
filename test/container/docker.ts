import { execFile, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'

/** What a docker command printed, and how it ended. */
export interface DockerResult {
  code: number
  stdout: string
  stderr: string
}

/** Runs `docker …` to its end; never throws for a non-zero exit (the caller asserts on `code`). */
export function dockerResult (args: string[], { timeoutMs = 120000 }: { timeoutMs?: number } = {}): Promise<DockerResult> {
  return new Promise((resolve, reject) => {
    execFile('docker', args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error !== null && typeof error.code !== 'number') reject(new Error(`docker ${args[0] ?? ''}: ${error.message}`))
      else resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr })
    })
  })
}

/** Runs `docker …` and returns its trimmed stdout; a non-zero exit is an error that shows stderr. */
export async function docker (args: string[], options: { timeoutMs?: number } = {}): Promise<string> {
  const result = await dockerResult(args, options)
  if (result.code !== 0) throw new Error(`docker ${args.join(' ')} exited ${result.code}: ${result.stderr.trim()}`)
  return result.stdout.trim()
}

/** Why no Docker engine can be used here, or undefined when one answers. */
export function dockerUnavailable (): string | undefined {
  const probe = spawnSync('docker', ['version', '--format', '{{.Server.Version}}'], { encoding: 'utf8', timeout: 15000 })
  if (probe.error !== undefined) return `the docker client cannot run (${probe.error.message})`
  if (probe.status !== 0) return `no Docker engine answers (\`docker version\`: ${probe.stderr.trim().split('\n').at(-1) ?? ''})`
  return undefined
}

/** A name no other run on this engine uses (several people share an engine). */
export const uniqueName = (prefix: string): string => `${prefix}-${process.pid}-${randomBytes(4).toString('hex')}`

/** `docker inspect` of one container, the fields the tests read. */
export interface ContainerState {
  Status: string
  Running: boolean
  OOMKilled: boolean
  ExitCode: number
  Health?: { Status: string, Log: { ExitCode: number, Output: string }[] }
}

export async function containerState (id: string): Promise<ContainerState> {
  return JSON.parse(await docker(['inspect', '--format', '{{json .State}}', id])) as ContainerState
}

/** The host address of a published container port (published on 127.0.0.1 only). */
export async function publishedUrl (id: string, containerPort: number): Promise<string> {
  const mapping = (await docker(['port', id, `${containerPort}/tcp`])).split('\n').find((line) => line.startsWith('127.0.0.1:'))
  if (mapping === undefined) throw new Error(`container port ${containerPort} is not published on 127.0.0.1`)
  return `http://${mapping}`
}

/** Thrown by a `waitFor` check when waiting longer cannot help (the container exited). */
export class GiveUp extends Error {}

/**
 * Polls `check` (every 50 ms) until it returns a value other than undefined, or fails after
 * `timeoutMs`. A check that throws is retried (not listening yet), unless it throws GiveUp: what
 * helpers.ts's `until` does not do, for a container that may die while it is awaited.
 */
export async function waitFor<T> (what: string, check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  for (;;) {
    try {
      const value = await check()
      if (value !== undefined) return value
    } catch (error) {
      if (error instanceof GiveUp) throw error
      lastError = error
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms${lastError === undefined ? '' : ` (last: ${String(lastError)})`}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** What decides whether the suite can have its base image (node:24-bookworm-slim). */
export interface BaseImageProbe {
  /** The image is on this engine already (built by .ci/docker-base.sh, or pulled). */
  present: () => boolean
  /** .ci/docker-base.sh can build it: root, and debootstrap or its cached Debian tarball. */
  buildable: () => boolean
  /** `docker pull` fetched it (a registry answers); tried last, only when the rest fails. */
  pull: () => boolean
}

/**
 * Why the container suite cannot have its base image here, or undefined when it can. Without it the
 * suite skips with this reason (REQUIRE_DOCKER=1 makes that a failure), instead of failing in its build.
 */
export function baseImageUnavailable (base: string, probe: BaseImageProbe): string | undefined {
  if (probe.present() || probe.buildable() || probe.pull()) return undefined
  return `${base} is not on this Docker engine, cannot be pulled, and .ci/docker-base.sh cannot build it here (it needs root and debootstrap)`
}

/** The probes of this machine. */
export function machineBaseImageProbe (base: string): BaseImageProbe {
  const succeeds = (command: string, args: string[], timeoutMs = 15000): boolean => spawnSync(command, args, {
    stdio: 'ignore',
    timeout: timeoutMs
  }).status === 0
  return {
    present: () => succeeds('docker', ['image', 'inspect', base]),
    buildable: () => {
      if (process.getuid?.() !== 0) return false
      const cache = process.env.PLANT_STORE_NODE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'plant-store')
      return existsSync(join(cache, 'debian-bookworm-minbase.tar')) || succeeds('sh', ['-c', 'command -v debootstrap || test -x /usr/sbin/debootstrap'])
    },
    pull: () => succeeds('docker', ['pull', base], 300000)
  }
}
