import { connect } from 'node:net'
import { createMemoryPlantRepository } from '../../src/plants/memory-plant-repository.js'
import type { PlantRepository } from '../../src/plants/plant-repository.js'

/** A repository that counts inserts: proves that a request never reached the route. */
export function countingRepository (): PlantRepository & { inserts: number } {
  const inner = createMemoryPlantRepository({ maxPlants: 1000 })
  const repository = {
    inserts: 0,
    async insert (...args: Parameters<PlantRepository['insert']>) {
      repository.inserts++
      return inner.insert(...args)
    },
    ready: () => inner.ready(),
    close: () => inner.close()
  }
  return repository
}

/** Writes raw bytes on a fresh TCP connection and collects everything until the server closes it. */
export function rawExchange (port: number, request: string | Buffer, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no close within ${timeoutMs} ms; received: ${Buffer.concat(chunks).toString('latin1').slice(0, 300)}`))
    }, timeoutMs)
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('error', () => {}) // a reset after the reply still leaves the reply to check
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(Buffer.concat(chunks).toString('latin1'))
    })
    socket.write(request)
  })
}

/** Splits a raw HTTP/1.1 reply into status, lower-cased headers and body. */
export function parseRawReply (text: string): { status: number, headers: Record<string, string>, body: string } {
  const end = text.indexOf('\r\n\r\n')
  const head = text.slice(0, end === -1 ? text.length : end).split('\r\n')
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(head[0] ?? '')?.[1] ?? 0)
  const headers: Record<string, string> = {}
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  return { status, headers, body: end === -1 ? '' : text.slice(end + 4) }
}

/**
 * Every reply in a raw byte stream, in order (interim 1xx replies included), each framed by its
 * Content-Length as the service sends them; the bytes after the last complete reply in `rest`.
 */
export function splitRawReplies (text: string): { replies: ReturnType<typeof parseRawReply>[], rest: string } {
  const replies = []
  let rest = text
  while (rest.startsWith('HTTP/1.1 ')) {
    const head = rest.indexOf('\r\n\r\n')
    if (head === -1) break
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(rest.slice(0, head))?.[1] ?? 0)
    if (rest.length < head + 4 + length) break
    replies.push(parseRawReply(rest.slice(0, head + 4 + length)))
    rest = rest.slice(head + 4 + length)
  }
  return { replies, rest }
}

/** Every reply in a raw byte stream that holds nothing else. */
export function splitReplies (text: string): ReturnType<typeof parseRawReply>[] {
  const { replies, rest } = splitRawReplies(text)
  if (rest !== '') throw new Error(`bytes after the last reply: ${JSON.stringify(rest.slice(0, 200))}`)
  return replies
}

/** Polls until `condition` holds (or throws after `timeoutMs`): waits on a state, never a fixed sleep. */
export async function until (condition: () => boolean | Promise<boolean>, timeoutMs = 10000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await condition()) {
    if (Date.now() > deadline) throw new Error(`${what} did not hold within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
