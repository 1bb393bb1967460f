import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { onTestFinished } from 'vitest'

/** The built entry point, as `npm start` and the Docker image run it. */
export const SERVER = fileURLToPath(new URL('../../dist/server.js', import.meta.url))
/** The token of a server startServer starts when `env` names no token of its own. */
export const E2E_TOKEN = 'storage-e2e-token'

export interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
}

export interface RunningProcess {
  child: ChildProcess
  /** Every stdout line so far (the server's pino JSON lines). */
  stdout: string[]
  stderr: () => string
  exited: Promise<Exit>
  /** Resolves with the first stdout line, existing or future, that passes `test`. */
  waitForLine: (test: (line: string) => boolean, timeoutMs?: number) => Promise<string>
}

export interface ServerProcess extends RunningProcess {
  url: string
  port: number
}

/**
 * Runs a command with only PATH and the given environment, collects its output and exit, and
 * kills it when the test ends if it is still running.
 */
export function run (command: string, args: string[], env: NodeJS.ProcessEnv, options: { cwd?: string, uid?: number, gid?: number } = {}): RunningProcess {
  const child = spawn(command, args, { ...options, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await exited
    }
  })
  const stdout: string[] = []
  const waiters = new Set<{ test: (line: string) => boolean, resolve: (line: string) => void }>()
  let partial = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n')
    partial = parts.pop() ?? ''
    for (const line of parts) {
      stdout.push(line)
      for (const waiter of waiters) {
        if (waiter.test(line)) {
          waiters.delete(waiter)
          waiter.resolve(line)
        }
      }
    }
  })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const waitForLine = (test: (line: string) => boolean, timeoutMs = 10000): Promise<string> => {
    const found = stdout.find(test)
    if (found !== undefined) return Promise.resolve(found)
    return new Promise((resolve, reject) => {
      const waiter = {
        test,
        resolve: (line: string) => {
          clearTimeout(timer)
          resolve(line)
        }
      }
      const timer = setTimeout(() => {
        waiters.delete(waiter)
        reject(new Error(`no matching log line within ${timeoutMs} ms; stderr: ${stderr}`))
      }, timeoutMs)
      waiters.add(waiter)
    })
  }
  return { child, stdout, stderr: () => stderr, exited, waitForLine }
}

/**
 * Starts the built server on a free port (PORT=0) and resolves once it listens, with E2E_TOKEN unless `env`
 * sets API_TOKENS or API_TOKENS_FILE. `args` replaces the script (e.g. the Dockerfile's `dist/server.js`,
 * relative to `cwd`). No shedding on event-loop delay unless `env` asks for it: on a loaded machine (CI
 * running several suites at once) the loop lags by hundreds of ms, and a 503 there is the machine's, not the code's.
 */
export async function startServer (env: NodeJS.ProcessEnv, { args = [SERVER], ...options }: {
  args?: string[],
  cwd?: string,
  uid?: number,
  gid?: number
} = {}): Promise<ServerProcess> {
  const token = env.API_TOKENS === undefined && env.API_TOKENS_FILE === undefined ? { API_TOKENS: E2E_TOKEN } : {}
  const proc = run(process.execPath, args, { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', MAX_EVENT_LOOP_DELAY_MS: '0', ...token, ...env }, options)
  const listening = await Promise.race([
    proc.waitForLine((line) => line.includes('Server listening at http://'), 15000),
    proc.exited.then(({ code, signal }) => { throw new Error(`server exited (${code ?? signal}) before listening: ${proc.stderr()}`) })
  ])
  const url = (JSON.parse(listening) as { msg: string }).msg.replace('Server listening at ', '')
  return { ...proc, url: url.replace('0.0.0.0', '127.0.0.1'), port: Number(new URL(url).port) }
}
