import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { postOverHttp, sampleValue } from '../helpers.js'
import { E2E_TOKEN, SERVER, startServer } from './server-process.js'

const REPORT_IMPORTS = fileURLToPath(new URL('report-optional-imports.mjs', import.meta.url))

const post = (url: string, id: number) => postOverHttp(url, E2E_TOKEN, { id, name: 'fern' })

describe('metrics and tracing (built server)', () => {
  it('serves /metrics on METRICS_PORT with request, store and process metrics; /metrics on the API port stays a 404; SIGTERM closes both', async () => {
    const server = await startServer({ METRICS_PORT: '0' })
    const line = await server.waitForLine((text) => text.includes('Metrics listening at'))
    const metricsUrl = (JSON.parse(line) as { url: string }).url
    expect((await post(server.url, 1)).status).toBe(200)
    expect((await fetch(`${server.url}/metrics`)).status).toBe(404)

    const res = await fetch(metricsUrl)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    const text = await res.text()
    expect(sampleValue(text, 'http_server_request_duration_seconds_count', {
      http_request_method: 'POST',
      http_route: '/plants',
      http_response_status_code: '200'
    })).toBe(1)
    expect(sampleValue(text, 'http_server_request_duration_seconds_count', {
      http_request_method: 'GET',
      http_route: 'unmatched',
      http_response_status_code: '404'
    })).toBe(1)
    expect(sampleValue(text, 'plant_store_inserts_total', { outcome: 'created' })).toBe(1)
    expect(sampleValue(text, 'plant_store_memory_capacity_plants')).toBe(1000000)
    expect(sampleValue(text, 'process_resident_memory_bytes')).toBeGreaterThan(0)
    expect(text).toContain('# TYPE nodejs_eventloop_lag_seconds gauge')

    server.child.kill('SIGTERM')
    expect(await server.exited).toEqual({ code: 0, signal: null })
    await expect(fetch(metricsUrl)).rejects.toThrow()
  })

  it('loads neither prom-client nor OpenTelemetry without METRICS_PORT and OTEL_EXPORTER_OTLP_ENDPOINT, and both with them', async () => {
    const plain = await startServer({}, { args: ['--import', REPORT_IMPORTS, SERVER] })
    expect((await post(plain.url, 1)).status).toBe(200)
    expect(plain.stderr()).not.toContain('loaded:')
    expect(plain.stdout).not.toContainEqual(expect.stringContaining('Metrics listening'))

    const observed = await startServer({ METRICS_PORT: '0', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }, { args: ['--import', REPORT_IMPORTS, SERVER] })
    expect((await post(observed.url, 1)).status).toBe(200)
    expect(observed.stderr()).toContain('node_modules/prom-client/')
    expect(observed.stderr()).toContain('node_modules/@opentelemetry/sdk-trace/')
  })
})
