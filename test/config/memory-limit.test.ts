import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { memoryLimit, residentAnonymousBytes } from '../../src/config/memory-limit.js'

const MiB = 1024 * 1024
const GiB = 1024 * MiB

/** A fake /proc/self/status with the given text, in a directory removed after the test. */
function statusFile (text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-status-'))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'status')
  writeFileSync(file, text)
  return file
}

// Node reads the cgroup (process.constrainedMemory(): cgroup v1 memory.limit_in_bytes, v2 memory.max);
// memoryLimit decides what the reading means. Every case is given here, on any host, without writing
// to the host's cgroups; a real limit is checked by the container suite (docker run --memory).
describe('memoryLimit: what a cgroup reading means', () => {
  it('is the cgroup\'s limit when it is below the machine\'s memory (a container\'s limit)', () => {
    expect(memoryLimit(96 * MiB, 8 * GiB)).toBe(96 * MiB)
    expect(memoryLimit(8 * GiB - 1, 8 * GiB)).toBe(8 * GiB - 1)
  })

  it('is none when the reading is 0 (no cgroup, or a Node that reports none as 0)', () => {
    expect(memoryLimit(0, 8 * GiB)).toBeUndefined()
  })

  it('is none when the reading is "unlimited" (2^64 from libuv, cgroup v2 memory.max "max"; v1\'s huge page-rounded maximum)', () => {
    expect(memoryLimit(2 ** 64, 8 * GiB)).toBeUndefined()
    expect(memoryLimit(9223372036854771712, 8 * GiB)).toBeUndefined()
  })

  it('is none when the limit is the machine\'s memory or above: it never binds first', () => {
    expect(memoryLimit(8 * GiB, 8 * GiB)).toBeUndefined()
    expect(memoryLimit(16 * GiB, 8 * GiB)).toBeUndefined()
  })

  it('reads this process\'s own cgroup and the machine\'s memory when given nothing', () => {
    expect(memoryLimit()).toBe(memoryLimit(process.constrainedMemory(), totalmem()))
  })
})

describe('residentAnonymousBytes', () => {
  it('reads RssAnon from the status file, in bytes', () => {
    const status = statusFile('Name:\tnode\nVmRSS:\t  204800 kB\nRssAnon:\t   51200 kB\nRssFile:\t  153600 kB\n')
    expect(residentAnonymousBytes(status)).toBe(51200 * 1024)
  })

  it('reads the line that is RssAnon whole: not one ending in RssAnon, nor one with more after kB', () => {
    expect(residentAnonymousBytes(statusFile('NotRssAnon:\t1 kB\nRssAnon:\t2 kB\n'))).toBe(2 * 1024)
    expect(residentAnonymousBytes(statusFile('RssAnon:\t3 kB or so\nRssAnon:\t4 kB\n'))).toBe(4 * 1024)
  })

  it('falls back to the whole RSS where the status file has no RssAnon line or does not exist (not Linux)', () => {
    const rss = process.memoryUsage.rss()
    for (const status of [statusFile('Name:\tnode\nVmRSS:\t 1 kB\n'), statusFile('RssAnon: 12 MB\n'), '/nonexistent/status']) {
      const read = residentAnonymousBytes(status)
      // The RSS moves a little between two readings; RssAnon's figure (12 kB or 12 MB) would be far off.
      expect(Math.abs(read - rss)).toBeLessThan(16 * MiB)
      expect(read).toBeGreaterThan(16 * MiB)
    }
  })

  it('reads this process\'s real resident anonymous memory: more than nothing, at most the whole RSS, and it grows with what the process writes', () => {
    const before = residentAnonymousBytes()
    expect(before).toBeGreaterThan(MiB)
    // Below the RSS by the pages of mapped files, Node's own binary among them: /proc/self/status is read.
    expect(process.memoryUsage.rss() - before).toBeGreaterThan(MiB)
    const block = Buffer.alloc(64 * MiB, 1)
    expect(residentAnonymousBytes() - before).toBeGreaterThan(32 * MiB)
    expect(block[0]).toBe(1)
  })
})
