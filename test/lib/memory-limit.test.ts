import { execFileSync } from 'node:child_process'
import { accessSync, constants, mkdirSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { residentAnonymousBytes } from '../../src/lib/memory-limit.js'

/** A cgroup v1 memory hierarchy this process may create groups in (root, outside a container). */
const CGROUP_V1 = '/sys/fs/cgroup/memory'
const canMakeGroups = (() => {
  try {
    accessSync(CGROUP_V1, constants.W_OK)
    return process.platform === 'linux'
  } catch {
    return false
  }
})()

describe('memory-limit', () => {
  it('reads the resident anonymous memory: more than nothing, at most the whole RSS', () => {
    const anonymous = residentAnonymousBytes()
    expect(anonymous).toBeGreaterThan(1024 * 1024)
    expect(anonymous).toBeLessThanOrEqual(process.memoryUsage.rss())
  })

  it('counts memory the process writes to', () => {
    const before = residentAnonymousBytes()
    const block = Buffer.alloc(64 * 1024 * 1024, 1)
    expect(residentAnonymousBytes() - before).toBeGreaterThan(32 * 1024 * 1024)
    expect(block[0]).toBe(1)
  })

  it.skipIf(!canMakeGroups)(`finds a cgroup memory limit (a container's) from inside the group${canMakeGroups ? '' : ` (skipped: ${CGROUP_V1} is not writable here)`}`, () => {
    const group = join(CGROUP_V1, `plant-store-test-${process.pid}`)
    mkdirSync(group)
    try {
      writeFileSync(join(group, 'memory.limit_in_bytes'), String(96 * 1024 * 1024))
      const script = `require('node:fs').writeFileSync(${JSON.stringify(join(group, 'cgroup.procs'))}, String(process.pid));
        import(${JSON.stringify(new URL('../../dist/lib/memory-limit.js', import.meta.url).href)}).then((m) => process.stdout.write(String(m.memoryLimit())))`
      expect(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })).toBe(String(96 * 1024 * 1024))
    } finally {
      rmdirSync(group)
    }
  })

})
