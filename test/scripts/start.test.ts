import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
// @ts-expect-error: a plain .mjs script, no types
import { distStatus, writeStamp } from '../../scripts/dist-stamp.mjs'
import { run } from '../e2e/server-process.js'
import { TOKEN } from '../helpers.js'

const status = distStatus as (root: string) => { current: boolean, digest: string }
const stamp = writeStamp as (digest: string | undefined, root: string) => void
const root = fileURLToPath(new URL('../../', import.meta.url))

/** A project tree in a temporary folder: sources, the three top-level inputs, and a built dist/. */
describe('npm start builds only when dist/ is not built from the current sources (scripts/dist-stamp.mjs)', () => {
  let project: string
  beforeEach(() => {
    project = mkdtempSync(join(tmpdir(), 'plants-stamp-'))
    mkdirSync(join(project, 'src', 'lib'), { recursive: true })
    mkdirSync(join(project, 'dist'))
    writeFileSync(join(project, 'src', 'server.ts'), 'export {}\n')
    writeFileSync(join(project, 'src', 'lib', 'a.ts'), 'export const a = 1\n')
    for (const file of ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json']) writeFileSync(join(project, file), '{}\n')
    writeFileSync(join(project, 'dist', 'server.js'), '')
    stamp(status(project).digest, project)
  })
  afterEach(() => { rmSync(project, { recursive: true, force: true }) })

  it('is current right after a build, and stays current when files are touched without a change', () => {
    expect(status(project).current).toBe(true)
    const later = new Date(Date.now() + 60000)
    utimesSync(join(project, 'src', 'lib', 'a.ts'), later, later)
    expect(status(project).current).toBe(true)
  })

  it('is stale when a source changes, a source is added or removed, or a tsconfig or the lockfile changes', () => {
    writeFileSync(join(project, 'src', 'lib', 'a.ts'), 'export const a = 2\n')
    expect(status(project).current).toBe(false)
    stamp(status(project).digest, project)
    writeFileSync(join(project, 'src', 'lib', 'b.ts'), 'export const b = 1\n')
    expect(status(project).current).toBe(false)
    stamp(status(project).digest, project)
    rmSync(join(project, 'src', 'lib', 'b.ts'))
    expect(status(project).current).toBe(false)
    stamp(status(project).digest, project)
    for (const file of ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json']) {
      writeFileSync(join(project, file), '{"changed":true}\n')
      expect(status(project).current, file).toBe(false)
      stamp(status(project).digest, project)
    }
    expect(status(project).current).toBe(true)
  })

  it('is stale without a stamp or without dist/server.js', () => {
    rmSync(join(project, 'dist', 'server.js'))
    expect(status(project).current).toBe(false)
    writeFileSync(join(project, 'dist', 'server.js'), '')
    rmSync(join(project, 'dist', '.build-stamp'))
    expect(status(project).current).toBe(false)
  })
})

describe('scripts/start.mjs (what `npm start` runs)', () => {
  it('builds a stale copy of the project, then starts without building when nothing changed, and SIGTERM still shuts it down gracefully', {
    timeout: 120000
  }, async () => {
    const project = mkdtempSync(join(tmpdir(), 'plants-start-'))
    try {
      for (const file of [
        'src', 'scripts', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'
      ]) cpSync(join(root, file), join(project, file), { recursive: true })
      // The installed packages, shared rather than copied.
      symlinkSync(join(root, 'node_modules'), join(project, 'node_modules'))
      const env = { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', API_TOKENS: TOKEN }
      const start = () => run(process.execPath, ['scripts/start.mjs'], env, { cwd: project })

      const first = start()
      await first.waitForLine((line) => line.includes('Server listening at'), 90000)
      expect(first.stderr()).toContain('building')
      first.child.kill('SIGTERM')
      expect(await first.exited).toEqual({ code: 0, signal: null })

      const second = start()
      const listening = await second.waitForLine((line) => line.includes('Server listening at'), 20000)
      expect(second.stderr()).not.toContain('building')
      const url = (JSON.parse(listening) as { msg: string }).msg.replace('Server listening at ', '')
      expect((await fetch(`${url}/livez`)).status).toBe(200)
      second.child.kill('SIGTERM')
      expect(await second.exited).toEqual({ code: 0, signal: null })
      expect(second.stdout).toContainEqual(expect.stringContaining('"signal":"SIGTERM"'))

      // Through npm, as the README starts it: npm passes SIGTERM on to its script's process, which
      // is the service itself (`exec` in package.json: no shell left between them to swallow it).
      const viaNpm = run('npm', ['start', '--silent'], env, { cwd: project })
      await viaNpm.waitForLine((line) => line.includes('Server listening at'), 20000)
      expect(viaNpm.stderr()).not.toContain('building')
      viaNpm.child.kill('SIGTERM')
      await viaNpm.exited
      await viaNpm.waitForLine((line) => line.includes('"signal":"SIGTERM"') && line.includes('closing'), 10000)
    } finally {
      rmSync(project, { recursive: true, force: true })
    }
  })
})
