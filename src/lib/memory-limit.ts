import { readFileSync } from 'node:fs'
import { totalmem } from 'node:os'

/**
 * The memory limit the system puts on this process, such as a container's (`docker run --memory`,
 * a Kubernetes limit: cgroup v1 or v2, read by Node itself), or undefined when there is none.
 */
export function memoryLimit (): number | undefined {
  const limit = process.constrainedMemory()
  // No limit reads as 0 or as libuv's "unlimited" (2^64), by version; a limit above the machine's memory is none.
  return limit > 0 && limit < totalmem() ? limit : undefined
}

const RSS_ANON = /^RssAnon:\s+(\d+) kB$/m

/**
 * The process's resident anonymous memory: what it has written to and the system cannot reclaim
 * without swap. The plain RSS also counts pages of files mapped from disk (Node's own binary, about
 * 50 MB), which the system drops and reads again under pressure: as a limit that would either
 * fire at start-up or, once those pages are squeezed out, measure thrashing rather than room.
 * Linux's /proc/self/status has it; elsewhere the RSS stands in.
 */
export function residentAnonymousBytes (): number {
  try {
    const match = RSS_ANON.exec(readFileSync('/proc/self/status', 'latin1'))
    if (match?.[1] !== undefined) return Number(match[1]) * 1024
  } catch {
    // Not Linux, or no /proc: the RSS below.
  }
  return process.memoryUsage.rss()
}
