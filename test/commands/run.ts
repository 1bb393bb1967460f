import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The built bin, as `npx plant-store` and the image run it (through its #! line). */
export const PLANT_STORE = fileURLToPath(new URL('../../dist/commands/plant-store.js', import.meta.url))

export interface Ran { status: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string, peakRssKb: number }

/**
 * Runs `plant-store args` with DATABASE_URL and `input` (a string, or a file to read) on standard input, and
 * samples its peak resident memory (VmHWM) until it exits.
 */
export function plantStore (args: string[], env: Record<string, string>, input?: { text?: string, file?: string },
  started?: (child: ChildProcess) => void): Promise<Ran> {
  const child = spawn(PLANT_STORE, args, { env: { PATH: process.env.PATH, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
  started?.(child)
  let stdout = ''
  let stderr = ''
  let peakRssKb = 0
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  child.stdin.on('error', () => {})
  child.stdin.end(input?.file === undefined ? input?.text ?? '' : readFileSync(input.file))
  const sample = setInterval(() => {
    try {
      const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]
      peakRssKb = Math.max(peakRssKb, Number(hwm ?? 0))
    } catch {}
  }, 50)
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (status, signal) => {
      clearInterval(sample)
      resolve({ status, signal, stdout, stderr, peakRssKb })
    })
  })
}

/** JSON Lines of plants, ids written exactly (bigints). */
export function jsonLines (plants: Array<{ id: bigint, name: string, tag?: string }>): string {
  return plants.map(({ id, name, tag }) =>
    `{"id":${id},"name":${JSON.stringify(name)}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`}}\n`).join('')
}
