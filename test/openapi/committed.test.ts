import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { DOCUMENT_FILE, documentText, REGENERATE, TYPES_FILE, typesText } from '../../scripts/openapi.mjs'
import { buildTestApp } from '../helpers.js'

async function servedDocumentText () {
  const app = await buildTestApp()
  const reply = await app.inject({ method: 'GET', url: '/openapi.json' })
  expect(reply.statusCode).toBe(200)
  return documentText(reply.json())
}

describe('the committed OpenAPI files (openapi/)', () => {
  it('openapi/openapi.json is the document the service serves', async () => {
    const committed = await readFile(DOCUMENT_FILE, 'utf8')
    expect(committed, `openapi/openapi.json is stale: run \`${REGENERATE}\` and commit it`).toBe(await servedDocumentText())
  })

  it('openapi/plant-store.d.ts is what openapi-typescript generates from the committed document', async () => {
    const [committedTypes, document] = await Promise.all([readFile(TYPES_FILE, 'utf8'), readFile(DOCUMENT_FILE, 'utf8')])
    expect(committedTypes, `openapi/plant-store.d.ts is stale: run \`${REGENERATE}\` and commit it`).toBe(await typesText(document))
  })

  it('types an id as number | bigint: ids beyond 2^53 are valid and have no exact JS number', async () => {
    const types = await readFile(TYPES_FILE, 'utf8')
    expect(types).toMatch(/\bid: number \| bigint;/)
  })
})
