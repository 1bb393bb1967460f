/** One request the client sent through `recordingFetch`, and what came of it. */
export interface Exchange {
  body: string
  /** performance.now() when the request left, and when its reply (or its failure) had fully come. */
  sentAt: number
  endedAt: number
  status?: number
  retryAfter?: string | undefined
  message?: string
}

/**
 * A fetch for the client's `fetch` option that records every exchange, so a test sees each attempt
 * the client makes (its body, its timing, its reply) without a proxy in between.
 */
export function recordingFetch (): { fetch: typeof fetch, exchanges: Exchange[] } {
  const exchanges: Exchange[] = []
  const recorded: typeof fetch = async (input, init) => {
    const exchange: Exchange = { body: String(init?.body), sentAt: performance.now(), endedAt: Number.NaN }
    exchanges.push(exchange)
    try {
      const response = await fetch(input, init)
      const text = await response.text()
      exchange.status = response.status
      exchange.retryAfter = response.headers.get('retry-after') ?? undefined
      if (response.status !== 200) exchange.message = (JSON.parse(text) as { message: string }).message
      return new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers })
    } finally {
      exchange.endedAt = performance.now()
    }
  }
  return { fetch: recorded, exchanges }
}

/** The exchanges by request body: one create's attempts, in order (the client sends the identical body each time). */
export function byBody (exchanges: Exchange[]): Map<string, Exchange[]> {
  const map = new Map<string, Exchange[]>()
  for (const exchange of exchanges) map.set(exchange.body, [...(map.get(exchange.body) ?? []), exchange])
  return map
}

/** Counts of replies by status, 'none' for an attempt that got no reply. */
export function statusCounts (exchanges: Exchange[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const { status } of exchanges) counts[status ?? 'none'] = (counts[status ?? 'none'] ?? 0) + 1
  return counts
}
