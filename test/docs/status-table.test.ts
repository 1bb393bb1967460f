import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

// README's status table and the OpenAPI document (openapi/openapi.json, kept current by test/openapi) describe the
// same answers of POST /plants: the same statuses (the table adds 404 and 405, which the document states in
// info.description), and each setting a description names appears in the table's row for that status.
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
const document = JSON.parse(readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8')) as {
  paths: { '/plants': { post: { responses: Record<string, { description: string }> } } }
}

/** The rows of README's status table: the status, and the rest of the row's text. */
function statusRows (markdown: string): Map<string, string> {
  const rows = new Map<string, string>()
  for (const match of markdown.matchAll(/^\| (\d{3}) \|(.*)\|$/gm)) rows.set(match[1] as string, match[2] as string)
  return rows
}

/** The settings (upper-case names with an underscore) a text names. */
const settings = (text: string): string[] => [...text.matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g)].map((match) => match[0])

describe('README\'s status table and the OpenAPI document', () => {
  const rows = statusRows(readme)
  const responses = document.paths['/plants'].post.responses

  it('list the same statuses of POST /plants, the table adding the 404 and 405 of other routes and methods', () => {
    expect(rows.size).toBeGreaterThan(10) // the table is found at all
    expect([...rows.keys()].filter((status) => !['404', '405'].includes(status))).toEqual(Object.keys(responses))
  })

  it('name in each row every setting the document\'s description of that status names', () => {
    const named = Object.entries(responses).flatMap(([status, { description }]) => settings(description).map((name) => [status, name]))
    expect(named.length).toBeGreaterThan(4) // the descriptions name settings at all
    expect(named.filter(([status, name]) => !settings(rows.get(status as string) ?? '').includes(name as string))).toEqual([])
  })

  it('the checks see a missing status and a setting the row leaves out', () => {
    const table = '| 200 | Stored. | |\n| 429 | Over the limit. | Wait. |\n'
    expect([...statusRows(table).keys()]).toEqual(['200', '429'])
    expect(settings(statusRows(table).get('429') ?? '')).not.toContain('RATE_LIMIT_PER_MINUTE')
    expect(settings('is over RATE_LIMIT_PER_MINUTE')).toEqual(['RATE_LIMIT_PER_MINUTE'])
  })
})
