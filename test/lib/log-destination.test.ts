import { execFileSync } from 'node:child_process'
import { closeSync, constants, mkdtempSync, openSync, readFileSync, readSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest'
import { createLogDestination } from '../../src/lib/log-destination.js'

const dirs: string[] = []
afterEach(() => { for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true }) })

function tempFile (): { path: string, fd: number } {
  const dir = mkdtempSync(join(tmpdir(), 'log-destination-'))
  dirs.push(dir)
  const path = join(dir, 'log')
  return { path, fd: openSync(path, 'a') }
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The file's text once the writer (asynchronous) has written `expected`. */
async function written (path: string, expected: string): Promise<void> {
  await vi.waitFor(() => { expect(readFileSync(path, 'utf8')).toBe(expected) }, { timeout: 5000, interval: 5 })
}

/** A FIFO with both ends open, non-blocking: a log reader the test reads when it chooses. */
function fifo (): { writer: number, read: () => Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'log-destination-'))
  dirs.push(dir)
  const path = join(dir, 'fifo')
  execFileSync('mkfifo', [path])
  const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  const writer = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK)
  onTestFinished(() => { closeSync(writer); closeSync(reader) })
  const chunk = Buffer.alloc(1 << 16)
  return {
    writer,
    /** Everything the pipe holds now. */
    read () {
      const chunks: Buffer[] = []
      for (;;) {
        let n: number
        try {
          n = readSync(reader, chunk)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break
          throw error
        }
        if (n === 0) break
        chunks.push(Buffer.from(chunk.subarray(0, n)))
      }
      return Buffer.concat(chunks)
    }
  }
}

describe('createLogDestination', () => {
  it('writes every line in order, text beyond ASCII as UTF-8 byte for byte, without waiting for more lines', async () => {
    const { path, fd } = tempFile()
    const { stream } = createLogDestination(1 << 20, fd)
    onTestFinished(() => { stream.destroy() })
    const lines = ['{"name":"Monstera déliciosa"}\n', '{"name":"蘭 🌵"}\n', '{"n":3}\n']
    for (const line of lines) stream.write(line)
    await written(path, lines.join(''))
    expect(readFileSync(path)).toEqual(Buffer.from(lines.join(''), 'utf8'))
    stream.write('{"n":4}\n')
    await written(path, `${lines.join('')}{"n":4}\n`)
  })

  it('writes the same bytes as pino.destination alone, which it batches for', async () => {
    const batched = tempFile()
    const plain = tempFile()
    const { stream } = createLogDestination(1 << 20, batched.fd)
    const library = pino.destination({ dest: plain.fd, sync: true })
    onTestFinished(() => { stream.destroy(); library.destroy() })
    for (const log of [pino({}, stream), pino({}, library)]) {
      for (let n = 0; n < 50; n++) log.info({ n, name: 'Monstera déliciosa 🌿' }, 'request')
    }
    const expected = readFileSync(plain.path, 'utf8').replace(/"time":\d+/g, '"time":0')
    expect(expected.split('\n')).toHaveLength(51)
    await vi.waitFor(() => {
      expect(readFileSync(batched.path, 'utf8').replace(/"time":\d+/g, '"time":0')).toBe(expected)
    }, { timeout: 5000, interval: 5 })
  })

  it('flushSync (pino\'s exit hook) writes what is pending at once', () => {
    const { path, fd } = tempFile()
    const { stream } = createLogDestination(1 << 20, fd)
    onTestFinished(() => { stream.destroy() })
    stream.write('{"n":1}\n')
    stream.flushSync()
    expect(readFileSync(path, 'utf8')).toBe('{"n":1}\n')
  })

  it('holds at most maxBytes for a reader that does not read, drops and counts the lines beyond, and reports them once when the reader has caught up', async () => {
    const pipe = fifo()
    const maxBytes = 100_000
    const destination = createLogDestination(maxBytes, pipe.writer)
    onTestFinished(() => { destination.stream.destroy() })
    let dropped = 0
    const reports: number[] = []
    destination.onDrop = (lines) => { dropped += lines }
    destination.onCaughtUp = (lines) => { reports.push(lines) }
    // 60 turns of 10 lines of 1,000 bytes: 600 kB, while the pipe takes 64 KiB and nobody reads.
    const line = (n: number) => `${JSON.stringify({ n, pad: 'x'.repeat(1000 - 16 - String(n).length) })}\n`
    expect(line(0)).toHaveLength(1000)
    let n = 0
    for (let turn = 0; turn < 60; turn++) {
      for (let i = 0; i < 10; i++) destination.stream.write(line(n++))
      await nextTurn()
    }
    await sleep(50)
    expect(dropped).toBeGreaterThan(0)
    expect(reports).toEqual([])
    // The reader comes back: everything held is written, then one report of what was dropped.
    let text = ''
    await vi.waitFor(() => {
      text += pipe.read().toString('utf8')
      expect(reports).toHaveLength(1)
    }, { timeout: 5000, interval: 20 })
    text += pipe.read().toString('utf8')
    const numbers = text.trim().split('\n').map((line) => (JSON.parse(line) as { n: number }).n)
    expect(numbers.length + dropped).toBe(600)
    expect(reports).toEqual([dropped])
    // In order, and what was held besides the pipe's own 64 KiB stayed within maxBytes.
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b))
    expect(Buffer.byteLength(text) - 65536).toBeLessThanOrEqual(maxBytes)
    // Drops began only once the lines held reached maxBytes: all of those are read.
    expect(Buffer.byteLength(text)).toBeGreaterThan(maxBytes)
    // Caught up: lines are written again, and no second report without new drops.
    destination.stream.write(line(600))
    await vi.waitFor(() => { expect(pipe.read().toString('utf8')).toBe(line(600)) }, { timeout: 5000, interval: 5 })
    await sleep(100)
    expect(reports).toHaveLength(1)
  })
})
