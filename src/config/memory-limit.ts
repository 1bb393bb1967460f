import { existsSync, readFileSync } from 'node:fs'
import { totalmem } from 'node:os'

/**
 * The memory limit on this process (a container's), or undefined when there is none. Node reads the
 * cgroup (`process.constrainedMemory()`); this decides what its answer means. Tests pass both readings.
 */
export function memoryLimit (constrained = process.constrainedMemory(), machine = totalmem()): number | undefined {
  // No limit reads as 0 or as 2^64, by version; a limit above the machine's memory is none.
  return constrained > 0 && constrained < machine ? constrained : undefined
}

/**
 * Resident anonymous memory: what the process wrote and cannot be reclaimed without swap. Unlike RSS, it
 * leaves out pages of mapped files (Node's own binary) that the system drops under pressure.
 */
export function residentAnonymousBytes (status = '/proc/self/status'): number {
  // Not Linux: the whole RSS.
  const kB = /^RssAnon:\s+(\d+) kB$/m.exec(existsSync(status) ? String(readFileSync(status)) : '')?.[1]
  return kB === undefined ? process.memoryUsage.rss() : Number(kB) * 1024
}
