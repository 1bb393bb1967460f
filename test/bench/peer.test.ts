import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { run } from '../e2e/server-process.js'
import { freePort, postOverHttp } from '../helpers.js'

const PEER = fileURLToPath(new URL('../../bench/peer.js', import.meta.url))
const TOKEN = 'peer-token-0123456789'

/**
 * `npm run bench` and `npm run bench:scale` measure the service against bench/peer.js: a peer that
 * answers errors fast, or stores nothing, would make the comparison a lie.
 */
describe('bench/peer.js: the same contract written the obvious way', () => {
  it('stores a plant (200), answers the same plant again 200, another plant with its id 409, no token 401, a bad body 400', async () => {
    const port = await freePort()
    const proc = run(process.execPath, [PEER], { PORT: String(port), API_TOKENS: TOKEN, METRICS_PORT: '0' })
    await proc.waitForLine((line) => line.includes('Server listening'), 15000)
    const post = async (body: unknown, token: string | null = TOKEN) => {
      const res = await postOverHttp(`http://127.0.0.1:${port}`, token, body)
      return [res.status, await res.json()]
    }
    expect(await post({ id: 7, name: 'fern', tag: 'green' })).toEqual([200, { name: 'fern', tag: 'green' }])
    expect(await post({ id: 7, name: 'fern', tag: 'green' })).toEqual([200, { name: 'fern', tag: 'green' }])
    expect(await post({ id: 7, name: 'moss' })).toEqual([409, { error: 409, message: 'a plant with id 7 already exists with another name or tag' }])
    const [unauthorized, record] = await post({ id: 8, name: 'fern' }, null)
    expect([unauthorized, (record as { error: number }).error]).toEqual([401, 401])
    const [bad, badRecord] = await post({ id: 'x', name: 'fern' })
    expect([bad, (badRecord as { error: number }).error]).toEqual([400, 400])
    // Plain JSON Schema, as the spec reads: no pattern on the text (U+0000 is the service's own refusal),
    // and a 19-digit id is an integer to Ajv once JSON.parse has made it a double.
    expect(await post({ id: 9, name: 'fern\u0000', tag: 'green' })).toEqual([200, { name: 'fern\u0000', tag: 'green' }])
    const res = await postOverHttp(`http://127.0.0.1:${port}`, TOKEN, '{"id":1234567890000000001,"name":"fern","tag":"green"}')
    expect([res.status, await res.json()]).toEqual([200, { name: 'fern', tag: 'green' }])
    // The access log at info: a line per request completed.
    await proc.waitForLine((line) => line.includes('"request completed"') && line.includes('"statusCode":409'))
  })
})
