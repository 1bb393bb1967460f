import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { jsonLines, plantStore } from './run.js'

const dir = mkdtempSync(join(tmpdir(), 'plant-store-export-'))
afterAll(() => { rmSync(dir, { recursive: true, force: true }) })

describe('plant-store export --to FILE', () => {
  it('writes FILE.partial and gives it the name FILE only once the export is complete (the same lines as to stdout)', async () => {
    const env = { DATABASE_URL: `sqlite:${join(dir, 'plants.db')}` }
    const plants = [{ id: 1n, name: 'fern', tag: 'green' }, { id: 2n ** 63n - 1n, name: 'int64 max' }]
    expect((await plantStore(['import'], env, { text: jsonLines(plants) })).status).toBe(0)
    const to = join(dir, 'plants.jsonl')
    const ran = await plantStore(['export', '--to', to], env)
    expect(ran.status, ran.stderr).toBe(0)
    expect(ran.stderr).toBe('exported 2 plants\n')
    expect(existsSync(`${to}.partial`)).toBe(false)
    const toStdout = await plantStore(['export'], env)
    expect(readFileSync(to, 'utf8')).toBe(toStdout.stdout)
    expect(readFileSync(to, 'utf8').split('\n').filter(Boolean).sort()).toEqual(jsonLines(plants).split('\n').filter(Boolean).sort())
  })
})
