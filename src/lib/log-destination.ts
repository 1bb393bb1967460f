import { fstatSync } from 'node:fs'
// CommonJS: the default import is the constructor itself, which carries itself as .SonicBoom (the named type).
import sonicBoom from 'sonic-boom'

export interface LogDestinationOptions {
  /**
   * Bytes of lines that may wait for a slow log reader (LOG_BUFFER_MAX_BYTES): sonic-boom's
   * maxLength. A line that would take the waiting bytes past it is dropped and counted. One
   * event-loop turn's lines, waiting for the end of that turn, are held to a third as many
   * characters: at most as many bytes once encoded, so a turn's batch alone always fits.
   */
  maxBytes: number
}

/**
 * Where the service's log lines go: a file descriptor (stdout), written by sonic-boom (pino's own
 * destination) asynchronously, so that a log reader that is slow, or does not read at all, never
 * holds up the event loop; lines are written once per turn of the event loop instead of once per
 * line. Under load one turn serves many requests, so their access lines leave in one write; a
 * write per line cost 1 to 2 µs more per request (bench/README.md, "What each feature costs"). A
 * line waits at most until the end of the turn that logged it, never for more traffic.
 *
 * What waits for the reader is bounded (sonic-boom's maxLength): a turn's lines beyond it are
 * dropped, counted (`dropped`, and `onDrop` for the metric), and reported once the writer has
 * caught up (`onCaughtUp`, for one warn line). A pipe is put in non-blocking mode (libuv's
 * uv_pipe_open, through process.stdout), so that a write the reader does not take comes back at
 * once (EAGAIN, retried by sonic-boom 100 ms later) instead of holding a thread of libuv's pool,
 * which would also keep the process from exiting. At exit (process.exit, a fatal error, the end
 * of a graceful close) what is waiting is written if the reader takes it; a full pipe at exit
 * costs those lines, never a process that hangs.
 */
export class TurnBatchedDestination {
  #lines: string[] = []
  #chars = 0
  /** Characters a turn may hold: a UTF-16 unit is at most 3 bytes of UTF-8. */
  readonly #maxChars: number
  readonly #out: ByteDestination
  #exiting = false
  /** Lines in the batch being handed to sonic-boom: what its drop event drops. */
  #batchLines = 0
  #unreported = 0
  /** Lines dropped since start. */
  dropped = 0
  /** Called with the number of lines each time lines are dropped (the metric). */
  onDrop: ((lines: number) => void) | undefined
  /** Called once the writer has caught up after dropping, with the lines dropped since the last call. */
  onCaughtUp: ((dropped: number) => void) | undefined

  constructor (fd: number, { maxBytes }: LogDestinationOptions) {
    this.#maxChars = Math.floor(maxBytes / 3)
    if (fd === 1 && isPipe(fd)) void process.stdout
    // Bytes, not text: a turn's lines are encoded to UTF-8 once, here (Buffer.from), and sonic-boom
    // writes the buffer as it is. Given a string, it measured the string's UTF-8 length on write,
    // encoded it again to write it, and a third time after writing (to slice what was written): a
    // turn's kilobytes of lines scanned three times over (bench/README.md, "Instructions per request").
    this.#out = new sonicBoom.SonicBoom({
      fd,
      sync: false,
      contentMode: 'buffer',
      maxLength: maxBytes,
      // A full pipe is retried while serving (the reader may come back), never at exit.
      retryEAGAIN: () => !this.#exiting
    }) as unknown as ByteDestination
    this.#out.on('drop', () => { this.#drop(this.#batchLines) })
    // The writer has written everything it held: the reader has caught up.
    this.#out.on('drain', () => { this.#report() })
    // A write that failed (EPIPE: nobody will ever read) costs what it held, never the process.
    this.#out.on('error', () => {})
    process.once('exit', () => { this.#exit() })
  }

  /** pino calls this with one line, newline included. */
  write (line: string): boolean {
    if (this.#chars + line.length > this.#maxChars) {
      this.#drop(1)
      return true
    }
    this.#chars += line.length
    if (this.#lines.push(line) === 1) setImmediate(this.#writeLines)
    return true
  }

  readonly #writeLines = (): void => {
    if (this.#lines.length === 0) return
    const text = this.#lines.join('')
    this.#batchLines = this.#lines.length
    this.#lines = []
    this.#chars = 0
    this.#out.write(Buffer.from(text))
  }

  #drop (lines: number): void {
    this.dropped += lines
    this.#unreported += lines
    this.onDrop?.(lines)
  }

  #report (): void {
    if (this.#unreported === 0) return
    const dropped = this.#unreported
    this.#unreported = 0
    this.onCaughtUp?.(dropped)
  }

  /** At exit: what the reader takes now is written; a full pipe is not waited for (retryEAGAIN). */
  #exit (): void {
    this.#exiting = true
    try {
      this.flushSync()
    } catch {
      // The reader took no more (EAGAIN, EPIPE): those lines are lost, the process still exits.
    }
  }

  /**
   * pino's logger.flush() and the exit hook: everything logged so far is written now, synchronously
   * (sonic-boom in its sync mode for the while), waiting for a full pipe except at exit. A chunk
   * already being written asynchronously is left to that write.
   */
  flushSync (): void {
    this.#out.sync = true
    try {
      this.#writeLines()
      this.#out.flushSync()
    } finally {
      this.#out.sync = false
    }
  }

  flush (callback?: (error?: Error) => void): void {
    this.flushSync()
    callback?.()
  }
}

/** A pipe or a socket: what a reader can stop reading (a file or a terminal is written through). */
function isPipe (fd: number): boolean {
  try {
    const stat = fstatSync(fd)
    return stat.isFIFO() || stat.isSocket()
  } catch {
    return false
  }
}

/** sonic-boom in contentMode 'buffer' (its types declare only the text mode's write). */
interface ByteDestination {
  write (bytes: Buffer): boolean
  flushSync (): void
  sync: boolean
  on (event: 'drop' | 'drain' | 'error', listener: () => void): void
}
