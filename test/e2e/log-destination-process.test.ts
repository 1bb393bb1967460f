import { execFileSync, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// The log destination (src/lib/log-destination.ts) in a process of its own, through dist/ (npm
// test builds first): what only a process can show, its stdout a real pipe and its exit. The
// in-process tests are test/lib/log-destination.test.ts (counted by mutation testing).

describe('the log destination in a process', () => {
  it('writes every line, in order, into a pipe that fills up and is read late', async () => {
    const module = fileURLToPath(new URL('../../dist/lib/log-destination.js', import.meta.url))
    // About 4 MB in one turn: far more than a pipe holds (64 KiB), so writes come back short or EAGAIN.
    const script = `import pino from 'pino'; import { createLogDestination } from ${JSON.stringify(module)};
      const log = pino({}, createLogDestination(64 << 20).stream); for (let n = 0; n < 20000; n++) log.info({ n, pad: 'é'.repeat(80) })`
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

  it('writes what was logged just before the process exits', () => {
    // The built module (npm test builds first): a child process, since the test is that it exits.
    const module = fileURLToPath(new URL('../../dist/lib/log-destination.js', import.meta.url))
    const script = `import pino from 'pino'; import { createLogDestination } from ${JSON.stringify(module)};
      const log = pino({}, createLogDestination(64 << 20).stream); log.info('first'); log.error('last words'); process.exit(3)`
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

  it('lets a process whose stdout nobody reads exit at once, without writing what the pipe refuses', async () => {
    const module = fileURLToPath(new URL('../../dist/lib/log-destination.js', import.meta.url))
    const script = `import pino from 'pino'; import { createLogDestination } from ${JSON.stringify(module)};
      const log = pino({}, createLogDestination(1 << 20).stream);
      let turns = 0; const timer = setInterval(() => { for (let n = 0; n < 100; n++) log.info({ n, pad: 'x'.repeat(200) }); if (++turns === 20) process.exit(5) }, 1)`
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../..', import.meta.url)), stdio: ['ignore', 'pipe', 'inherit'] })
    // Never read: the pipe fills at 64 KiB and stays full.
    child.stdout.pause()
    const code = await new Promise((resolve) => child.once('exit', resolve))
    expect(code).toBe(5)
    child.stdout.destroy()
  })
})
