import { describe, expect, it } from 'vitest'
import { buildTestApp, postPlant } from '../helpers.js'

describe('POST /plants', () => {
  it('answers 200 with the Plant when the plant is new', async () => {
    const app = await buildTestApp()
    const res = await postPlant(app, { id: 1, name: 'fern' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ name: 'fern' })
  })
})
