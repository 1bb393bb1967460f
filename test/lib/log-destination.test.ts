import { execFileSync, spawn } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { TurnBatchedDestination } from '../../src/lib/log-destination.js'

const dirs: string[] = []
afterEach(() => { for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true }) })

function tempFile (): { path: string, fd: number } {
  const dir = mkdtempSync(join(tmpdir(), 'log-destination-'))
  dirs.push(dir)
  const path = join(dir, 'log')
  return { path, fd: openSync(path, 'a') }
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

describe('TurnBatchedDestination', () => {
  it('writes the lines of one event-loop turn together, in order, at the end of that turn', async () => {
    const { path, fd } = tempFile()
    const destination = new TurnBatchedDestination(fd)
    destination.write('{"n":1}\n')
    destination.write('{"n":2}\n')
    expect(readFileSync(path, 'utf8')).toBe('')
    await nextTurn()
    expect(readFileSync(path, 'utf8')).toBe('{"n":1}\n{"n":2}\n')
    destination.write('{"n":3}\n')
    await nextTurn()
    expect(readFileSync(path, 'utf8')).toBe('{"n":1}\n{"n":2}\n{"n":3}\n')
    closeSync(fd)
  })

  it('writes text beyond ASCII as UTF-8, byte for byte', async () => {
    const { path, fd } = tempFile()
    const destination = new TurnBatchedDestination(fd)
    const lines = ['{"name":"Monstera déliciosa"}\n', '{"name":"蘭 🌵"}\n', '{"n":3}\n']
    for (const line of lines) destination.write(line)
    await nextTurn()
    expect(readFileSync(path)).toEqual(Buffer.from(lines.join(''), 'utf8'))
    closeSync(fd)
  })

  it('flushSync (pino\'s logger.flush) writes what is pending at once', () => {
    const { path, fd } = tempFile()
    const destination = new TurnBatchedDestination(fd)
    destination.write('{"n":1}\n')
    destination.flushSync()
    expect(readFileSync(path, 'utf8')).toBe('{"n":1}\n')
    closeSync(fd)
  })

  it('writes every line, in order, into a pipe that fills up and is read late', async () => {
    const module = fileURLToPath(new URL('../../dist/lib/log-destination.js', import.meta.url))
    // About 4 MB in one turn: far more than a pipe holds (64 KiB), so writes come back short or EAGAIN.
    const script = `import pino from 'pino'; import { TurnBatchedDestination } from ${JSON.stringify(module)};
      const log = pino({}, new TurnBatchedDestination(1)); for (let n = 0; n < 20000; n++) log.info({ n, pad: 'é'.repeat(80) })`
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../..', import.meta.url)), stdio: ['ignore', 'pipe', 'inherit'] })
    child.stdout.pause()
    await new Promise((resolve) => setTimeout(resolve, 300))
    const chunks: Buffer[] = []
    child.stdout.on('data', (chunk: Buffer) => { chunks.push(chunk) }).resume()
    const code = await new Promise((resolve) => child.once('close', resolve))
    expect(code).toBe(0)
    const numbers = Buffer.concat(chunks).toString('utf8').trim().split('\n').map((line) => (JSON.parse(line) as { n: number }).n)
    expect(numbers).toEqual(Array.from({ length: 20000 }, (_, n) => n))
  })

  it('writes what was logged in the turn in which the process exits', () => {
    // The built module (npm test builds first): a child process, since the test is that it exits.
    const module = fileURLToPath(new URL('../../dist/lib/log-destination.js', import.meta.url))
    const script = `import pino from 'pino'; import { TurnBatchedDestination } from ${JSON.stringify(module)};
      const log = pino({}, new TurnBatchedDestination(1)); log.info('first'); log.error('last words'); process.exit(3)`
    let stdout = ''
    try {
      execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: fileURLToPath(new URL('../..', import.meta.url)) })
    } catch (error) {
      const failed = error as { status: number, stdout: string }
      expect(failed.status).toBe(3)
      stdout = failed.stdout
    }
    const messages = stdout.trim().split('\n').map((line) => (JSON.parse(line) as { msg: string }).msg)
    expect(messages).toEqual(['first', 'last words'])
  })
})
