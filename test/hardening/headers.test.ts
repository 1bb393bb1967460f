import { describe, expect, it } from 'vitest'
import { AUTH, JSON_AUTH, buildTestApp, postPlant } from '../helpers.js'
import type { PlantRepository } from '../../src/plants/plant-repository.js'

describe('reply headers and exposure', () => {
  it('sends cache-control: no-store and nosniff on /plants replies of every status', async () => {
    const app = await buildTestApp({ config: { BODY_LIMIT: 64 } })
    const replies = [
      await postPlant(app, { id: 1, name: 'fern' }), // 200
      await postPlant(app, { id: 1, name: 'moss' }), // 409
      await postPlant(app, '{"id":'), // 400
      await postPlant(app, { id: 2, name: 'fern' }, { 'content-type': 'application/json' }), // 401
      await postPlant(app, { id: 3, name: 'x'.repeat(100) }), // 413
      await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, 'content-type': 'text/plain' }, payload: 'x' }), // 415
      await app.inject({ method: 'GET', url: '/plants', headers: AUTH }), // 405
      await app.inject({ method: 'GET', url: '/nope', headers: AUTH }), // 404
      await app.inject({ method: 'GET', url: '/plants%', headers: AUTH }) // 400, a framework error before routing
    ]
    expect(replies.map((res) => res.statusCode)).toEqual([200, 409, 400, 401, 413, 415, 405, 404, 400])
    for (const res of replies) {
      expect(res.headers['cache-control']).toBe('no-store')
      expect(res.headers['x-content-type-options']).toBe('nosniff')
    }
  })

  it('sends nosniff and no framework banner on the open routes', async () => {
    const app = await buildTestApp()
    for (const url of ['/livez', '/readyz', '/openapi.json', '/docs/']) {
      const res = await app.inject({ method: 'GET', url })
      expect(res.statusCode, url).toBeLessThan(400)
      expect(res.headers['x-content-type-options'], url).toBe('nosniff')
      expect(res.headers['x-powered-by'], url).toBeUndefined()
      expect(res.headers.server, url).toBeUndefined()
    }
  })

  it('answers 500 with a generic message, no stack and no internal detail, when the store throws', async () => {
    const failing: PlantRepository = {
      insert: async () => { throw new Error('SELECT secret FROM internal_table at /srv/app/db.js:12') },
      ready: async () => {},
      close: async () => {}
    }
    const app = await buildTestApp({ repository: failing })
    const res = await postPlant(app, { id: 1, name: 'fern' }, JSON_AUTH)
    expect(res.statusCode).toBe(500)
    expect(res.json()).toEqual({ error: 500, message: 'Internal Server Error' })
    expect(res.body).not.toMatch(/secret|internal_table|db\.js|at /)
  })
})
