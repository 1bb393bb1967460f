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

type Reply = ReturnType<typeof parseRawReply>

/** A final reply, and the interim (1xx) statuses written before it. */
export interface Answer { interim: number[], reply: Reply }

/**
 * The replies in a raw byte stream, in order, each framed by its Content-Length, except that the
 * reply to a HEAD (`heads[i]`: the i-th final reply) and an interim reply have no body. `rest` holds
 * whatever follows the last final reply.
 */
export function splitReplies (text: string, heads: boolean[] = []): { answers: Answer[], rest: string } {
  const answers: Answer[] = []
  let interim: number[] = []
  let rest = text
  let unread = text
  while (unread.startsWith('HTTP/1.1 ')) {
    const head = unread.indexOf('\r\n\r\n')
    if (head === -1) break
    const status = Number(unread.slice(9, 12))
    const final = status >= 200
    const length = !final || heads[answers.length] === true ? 0 : Number(/\r\ncontent-length: *(\d+)/i.exec(unread.slice(0, head))?.[1] ?? 0)
    if (unread.length < head + 4 + length) break
    const message = unread.slice(0, head + 4 + length)
    unread = unread.slice(message.length)
    if (!final) interim.push(status)
    else {
      answers.push({ interim, reply: parseRawReply(message) })
      interim = []
      rest = unread
    }
  }
  return { answers, rest }
}
