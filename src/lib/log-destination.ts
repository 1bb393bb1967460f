import pino from 'pino'

export interface LogDestination {
  /** pino's asynchronous destination (sonic-boom). */
  stream: ReturnType<typeof pino.destination>
  /** Called for each line dropped because the reader fell behind (the metric). */
  onDrop?: () => void
  /** Called once the writer has caught up after drops, with how many lines were dropped meanwhile. */
  onCaughtUp?: (dropped: number) => void
}

/**
 * stdout for the JSON lines, written asynchronously so that a slow reader never holds up the event
 * loop. At most `maxBytes` (LOG_BUFFER_MAX_BYTES) wait for the reader; the lines beyond are dropped.
 * Reading process.stdout opens a pipe non-blocking: a full pipe is retried later, never waited on.
 */
export function createLogDestination (maxBytes: number, fd: number = process.stdout.fd): LogDestination {
  let exiting = false
  let unreported = 0
  // Before pino's own exit flush: what the reader takes now is written, what a full pipe refuses is lost.
  process.once('exit', () => {
    exiting = true
    try {
      stream.flushSync()
    } catch {
      stream.destroy()
    }
  })
  const stream = pino.destination({
    dest: fd,
    sync: false,
    minLength: 4096,
    maxLength: maxBytes,
    periodicFlush: 50,
    retryEAGAIN: () => !exiting
  })
  const destination: LogDestination = { stream }
  stream.on('drop', () => {
    unreported++
    destination.onDrop?.()
  })
  stream.on('drain', () => {
    if (unreported === 0) return
    const dropped = unreported
    unreported = 0
    destination.onCaughtUp?.(dropped)
  })
  // A write that failed (EPIPE: nobody will ever read) costs what it held, never the process.
  stream.on('error', () => {})
  return destination
}
