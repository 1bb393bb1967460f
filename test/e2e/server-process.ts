import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { onTestFinished } from 'vitest'

export const SERVER = fileURLToPath(new URL('../../dist/server.js', import.meta.url))

export interface ServerProcess {
  child: ChildProcess
  url: string
  port: number
  /** Every stdout line so far (pino JSON). */
  stdout: string[]
  stderr: () => string
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}

/** Runs a command with the given environment and collects its output and exit. */
export function run (command: string, args: string[], env: NodeJS.ProcessEnv, options: { cwd?: string, uid?: number, gid?: number } = {}) {
  const child = spawn(command, args, { ...options, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  const stdout: string[] = []
  let stderr = ''
  let partial = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n')
    partial = parts.pop() ?? ''
    stdout.push(...parts)
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }))
  onTestFinished(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return { child, stdout, stderr: () => stderr, exited }
}

/** Starts the built server on a free port and waits for its "listening" line. */
export async function startServer (env: NodeJS.ProcessEnv): Promise<ServerProcess> {
  const proc = run(process.execPath, [SERVER], { PORT: '0', ...env })
  const deadline = Date.now() + 15000
  while (Date.now() < deadline) {
    const line = proc.stdout.find((text) => text.includes('Server listening at http://'))
    if (line !== undefined) {
      const url = (JSON.parse(line) as { msg: string }).msg.replace('Server listening at ', '')
      return { ...proc, url, port: Number(new URL(url).port) }
    }
    if (proc.child.exitCode !== null) throw new Error(`server exited ${proc.child.exitCode}: ${proc.stderr()}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`server did not start: ${proc.stderr()}`)
}
