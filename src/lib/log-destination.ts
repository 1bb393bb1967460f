import pino from 'pino'

/**
 * Where the service's log lines go: a file descriptor (stdout), written through pino's own
 * destination (sonic-boom: partial writes, EAGAIN on a full pipe, EPIPE), but once per turn of the
 * event loop instead of once per line. Under load one turn serves many requests, so their access
 * lines leave in one write(2); a synchronous write per line cost 1 to 2 µs more per request
 * (bench/README.md, "What each feature costs"). A line waits at most until the end of the turn that
 * logged it, never for more traffic: unlike sonic-boom's minLength, which holds lines until enough
 * bytes come, a quiet service still logs at once. What a turn logged is written even when the
 * process exits in that turn (process.exit, a fatal error); only a SIGKILL can lose it.
 */
export class TurnBatchedDestination {
  #lines: string[] = []
  readonly #out: ByteDestination

  constructor (fd: number) {
    // Bytes, not text: a turn's lines are encoded to UTF-8 once, here (Buffer.from), and sonic-boom
    // writes the buffer as it is. Given a string, it measured the string's UTF-8 length on write,
    // encoded it again to write it, and a third time after writing (to slice what was written): a
    // turn's kilobytes of lines scanned three times over (bench/README.md, "Instructions per request").
    this.#out = pino.destination({ dest: fd, sync: true, contentMode: 'buffer' }) as unknown as ByteDestination
    process.once('exit', () => { this.flushSync() })
  }

  /** pino calls this with one line, newline included. */
  write (line: string): boolean {
    if (this.#lines.push(line) === 1) setImmediate(this.#writeLines)
    return true
  }

  readonly #writeLines = (): void => {
    if (this.#lines.length === 0) return
    const text = this.#lines.join('')
    this.#lines = []
    this.#out.write(Buffer.from(text))
  }

  /** pino's logger.flush() and the exit hook: everything logged so far is written now. */
  flushSync (): void {
    this.#writeLines()
    this.#out.flushSync()
  }

  flush (callback?: (error?: Error) => void): void {
    this.flushSync()
    callback?.()
  }
}

/** sonic-boom in contentMode 'buffer' (its types declare only the text mode's write). */
interface ByteDestination {
  write (bytes: Buffer): boolean
  flushSync (): void
}
