import pino from 'pino'

/** What pino writes its lines to (a pino DestinationStream), and what main.ts hears about drops. */
export interface LogDestination {
  stream: { write (line: string): void, flushSync (): void, destroy (): void }
  /** Called with the number of lines dropped because the reader fell behind (the metric). */
  onDrop?: (lines: number) => void
  /** Called once the writer has caught up after drops, with how many lines were dropped meanwhile. */
  onCaughtUp?: (dropped: number) => void
}

/**
 * stdout for the JSON lines, written asynchronously so that a slow reader never holds up the event
 * loop: at most `maxBytes` (LOG_BUFFER_MAX_BYTES) wait for the reader, the lines beyond are dropped.
 * A turn of the event loop's lines go to pino.destination as one string: handed one line at a time,
 * it measures all it holds again for every line. Reading process.stdout makes a pipe non-blocking.
 */
export function createLogDestination (maxBytes: number, fd: number = process.stdout.fd): LogDestination {
  let exiting = false
  let lines: string[] = []
  let dropping = 0
  let unreported = 0
  // Before pino.destination's own exit flush: what the reader takes now is written, what a full pipe refuses is lost.
  process.once('exit', () => {
    exiting = true
    try {
      destination.stream.flushSync()
    } catch {
      out.destroy()
    }
  })
  // A batch under minLength waits up to periodicFlush for more, so that quiet traffic still writes in kilobytes.
  const out = pino.destination({
    dest: fd,
    sync: false,
    minLength: 4096,
    maxLength: maxBytes,
    periodicFlush: 50,
    retryEAGAIN: () => !exiting
  })
  const writeLines = (): void => {
    if (lines.length === 0) return
    dropping = lines.length
    const text = lines.join('')
    lines = []
    out.write(text)
  }
  const destination: LogDestination = {
    stream: {
      write (line) {
        if (lines.push(line) === 1) setImmediate(writeLines)
      },
      flushSync () {
        writeLines()
        out.flushSync()
      },
      destroy () {
        lines = []
        out.destroy()
      }
    }
  }
  // A batch that would take what waits past maxBytes is dropped whole (sonic-boom's maxLength).
  out.on('drop', () => {
    unreported += dropping
    destination.onDrop?.(dropping)
  })
  out.on('drain', () => {
    if (unreported === 0) return
    const dropped = unreported
    unreported = 0
    destination.onCaughtUp?.(dropped)
  })
  // A write that failed (EPIPE: nobody will ever read) costs what it held, never the process.
  out.on('error', () => {})
  return destination
}
