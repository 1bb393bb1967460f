import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { onTestFinished } from 'vitest'

export interface Received {
  method: string
  url: string
  headers: IncomingHttpHeaders
  body: string
  /** performance.now() when the request's body had arrived. */
  at: number
}

/** What the stub does with the n-th request (0-based): reply, or leave the response to the caller (no reply, a reset). */
export type Answer = (n: number, request: Received, response: ServerResponse) => void

/** A reply with a JSON body and extra headers. */
export function reply (status: number, body: unknown, headers: Record<string, string> = {}) {
  return (response: ServerResponse): void => {
    const text = typeof body === 'string' ? body : JSON.stringify(body)
    response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(text)
  }
}

/** An HTTP server on a free port that answers with `answer` and records every request; closed when the test ends. */
export async function startStub (answer: Answer): Promise<{ url: string, received: Received[] }> {
  const received: Received[] = []
  const server = createServer((request, response) => {
    let body = ''
    request.setEncoding('utf8').on('data', (chunk: string) => { body += chunk }).on('end', () => {
      const seen = { method: request.method ?? '', url: request.url ?? '', headers: request.headers, body, at: performance.now() }
      received.push(seen)
      answer(received.length - 1, seen, response)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received }
}
