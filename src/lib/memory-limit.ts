import { readFileSync } from 'node:fs'
import { totalmem } from 'node:os'

/**
 * The memory limit the system puts on this process, such as a container's (`docker run --memory`,
 * a Kubernetes limit), or undefined when there is none. Node reads the cgroup itself
 * (`process.constrainedMemory()`: libuv reads cgroup v1's memory.limit_in_bytes or v2's memory.max);
 * this decides what its answer means, and takes the two readings as arguments so that tests can give
 * each case (test/lib/memory-limit.test.ts; the container suite checks a real limit).
 */
export function memoryLimit (constrained: number = process.constrainedMemory(), machine: number = totalmem()): number | undefined {
  // No limit reads as 0 or as libuv's "unlimited" (2^64), by version; a limit above the machine's memory is none.
  return constrained > 0 && constrained < machine ? constrained : undefined
}

const RSS_ANON = /^RssAnon:\s+(\d+) kB$/m

/**
 * The process's resident anonymous memory: what it has written to and the system cannot reclaim
 * without swap. The plain RSS also counts pages of files mapped from disk (Node's own binary, about
 * 50 MB), which the system drops and reads again under pressure: as a limit that would either
 * fire at start-up or, once those pages are squeezed out, measure thrashing rather than room.
 * Linux's /proc/self/status has it (`status` is that file; tests give their own); elsewhere the RSS
 * stands in.
 */
export function residentAnonymousBytes (status = '/proc/self/status'): number {
  try {
    const match = RSS_ANON.exec(readFileSync(status, 'latin1'))
    if (match?.[1] !== undefined) return Number(match[1]) * 1024
  } catch {
    // Not Linux, or no /proc: the RSS below.
  }
  return process.memoryUsage.rss()
}
