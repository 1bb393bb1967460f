import { createServer } from 'node:http'
import { describe, expect, it, onTestFinished } from 'vitest'
import { JSON_AUTH, buildTestApp, postPlant } from '../helpers.js'

interface OtlpAttribute { key: string, value: { stringValue?: string, intValue?: number | string } }
interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes: OtlpAttribute[]
  status?: { code?: number }
}
interface OtlpExport {
  resourceSpans: Array<{ resource: { attributes: OtlpAttribute[] }, scopeSpans: Array<{ spans: OtlpSpan[] }> }>
}

const SPAN_KIND_INTERNAL = 1
const SPAN_KIND_SERVER = 2
const SPAN_STATUS_ERROR = 2

/** A small OTLP/HTTP receiver: keeps what is POSTed to /v1/traces (JSON), answers 200 as a collector does. */
async function startReceiver () {
  const exports: Array<{ path: string, contentType: string | undefined, body: OtlpExport }> = []
  const server = createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => {
      exports.push({ path: req.url ?? '', contentType: req.headers['content-type'], body: JSON.parse(text) as OtlpExport })
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const spans = (): OtlpSpan[] => exports.flatMap((e) => e.body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)))
  return { endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`, exports, spans }
}

const attribute = (span: OtlpSpan | undefined, key: string) => {
  const value = span?.attributes.find((a) => a.key === key)?.value
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue))
}

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CALLER_SPAN = '00f067aa0ba902b7'

describe('OTLP tracing (OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  it('exports a server span per request and a child span for the store insert, as plant-store, continuing the caller\'s trace', async () => {
    const receiver = await startReceiver()
    const app = await buildTestApp({ config: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint } })
    // Over a socket, where the body arrives in events of its own: the insert must still find its parent.
    const url = await app.listen({ port: 0, host: '127.0.0.1' })
    const created = await fetch(`${url}/plants`, {
      method: 'POST',
      headers: { ...JSON_AUTH, traceparent: `00-${TRACE}-${CALLER_SPAN}-01` },
      body: JSON.stringify({ id: 1, name: 'fern' })
    })
    expect(created.status).toBe(200)
    expect((await fetch(`${url}/nope`)).status).toBe(404)
    // Closing the app flushes the spans still buffered.
    await app.close()

    expect(receiver.exports.map((e) => [e.path, e.contentType])).toContainEqual(['/v1/traces', 'application/json'])
    const resource = receiver.exports[0]?.body.resourceSpans[0]?.resource
    expect(resource?.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'plant-store' } })

    const spans = receiver.spans()
    const server = spans.find((span) => span.name === 'POST /plants')
    expect(server).toMatchObject({ traceId: TRACE, parentSpanId: CALLER_SPAN, kind: SPAN_KIND_SERVER })
    expect(attribute(server, 'http.request.method')).toBe('POST')
    expect(attribute(server, 'http.route')).toBe('/plants')
    expect(attribute(server, 'http.response.status_code')).toBe(200)

    const insert = spans.find((span) => span.name === 'plant_store insert')
    expect(insert).toMatchObject({ traceId: TRACE, parentSpanId: server?.spanId, kind: SPAN_KIND_INTERNAL })
    expect(attribute(insert, 'plant_store.outcome')).toBe('created')

    // No route: named by the method alone, no http.route; a new trace, since no traceparent came.
    const unmatched = spans.find((span) => span.name === 'GET')
    expect(unmatched?.traceId).not.toBe(TRACE)
    expect(unmatched?.parentSpanId ?? '').toBe('')
    expect(attribute(unmatched, 'http.route')).toBeUndefined()
    expect(attribute(unmatched, 'http.response.status_code')).toBe(404)
    expect(spans).toHaveLength(3)
  })

  it('keeps the caller\'s decision not to sample, and ignores an invalid traceparent (a new trace, never a 400)', async () => {
    const receiver = await startReceiver()
    const app = await buildTestApp({ config: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint } })
    expect((await postPlant(app, { id: 1, name: 'fern' }, { ...JSON_AUTH, traceparent: `00-${TRACE}-${CALLER_SPAN}-00` })).statusCode).toBe(200)
    expect((await postPlant(app, { id: 2, name: 'fern' }, { ...JSON_AUTH, traceparent: 'garbage' })).statusCode).toBe(200)
    await app.close()
    const spans = receiver.spans()
    expect(spans.map((span) => span.name).sort()).toEqual(['POST /plants', 'plant_store insert'])
    expect(spans.map((span) => span.traceId)).not.toContain(TRACE)
  })

  it('marks a 5xx server span as an error', async () => {
    const receiver = await startReceiver()
    const app = await buildTestApp({
      config: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint },
      repository: { insert: async () => { throw new Error('disk on fire') }, ready: async () => {}, close: async () => {} }
    })
    expect((await postPlant(app, { id: 1, name: 'fern' })).statusCode).toBe(500)
    await app.close()
    const spans = receiver.spans()
    const server = spans.find((span) => span.name === 'POST /plants')
    expect(attribute(server, 'http.response.status_code')).toBe(500)
    expect(server?.status?.code).toBe(SPAN_STATUS_ERROR)
    const insert = spans.find((span) => span.name === 'plant_store insert')
    expect(attribute(insert, 'plant_store.outcome')).toBe('error')
    expect(insert?.status?.code).toBe(SPAN_STATUS_ERROR)
  })

  it('sends to <endpoint>/v1/traces, with or without a trailing slash or a base path', async () => {
    const receiver = await startReceiver()
    for (const endpoint of [`${receiver.endpoint}/`, `${receiver.endpoint}/otlp`]) {
      const app = await buildTestApp({ config: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint } })
      expect((await postPlant(app, { id: 1, name: 'fern' })).statusCode).toBe(200)
      // Closing the app flushes the spans still buffered.
      await app.close()
    }
    expect(receiver.exports.map((e) => e.path)).toEqual(['/v1/traces', '/otlp/v1/traces'])
  })
})
