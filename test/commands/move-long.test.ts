import { createHash } from 'node:crypto'
import { createReadStream, createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createTestSchemas, type TestSchemas } from '../plants/postgres-test-schemas.js'
import { plantStore } from './run.js'

// A move of a million plants, SQLite → PostgreSQL → SQLite, and of plants as large as the API takes, with memory
// read all the way: CI only (REQUIRE_POSTGRES=1), a few minutes each.
const url = process.env.TEST_DATABASE_URL
const ci = process.env.REQUIRE_POSTGRES === '1'
if (ci && url === undefined) {
  describe('plant-store: a million plants', () => {
    it('runs: REQUIRE_POSTGRES=1 turns a skip into a failure', () => { expect.fail('REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set') })
  })
}
const skip = !ci ? 'a CI-only long test (REQUIRE_POSTGRES=1)' : url === undefined ? 'TEST_DATABASE_URL is not set' : undefined
if (skip !== undefined) console.warn(`plant-store move of a million plants skipped: ${skip}`)

const COUNT = 1_000_000
const dir = mkdtempSync(join(tmpdir(), 'plant-store-move-'))
let schemas: TestSchemas | undefined
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await schemas?.dropAll()
})

describe.skipIf(skip !== undefined)('plant-store: a million plants', () => {
  it('moves 1,000,000 plants SQLite → PostgreSQL → SQLite, every one exactly, each command under 150 MB', async () => {
    const input = join(dir, 'plants.jsonl')
    // 19-digit ids across int64 (the parser's exact path), the extremes included, a tag on every third.
    const lines: string[] = []
    for (let n = 0; n < COUNT; n++) {
      const id = n === 0 ? -(2n ** 63n) : n === COUNT - 1 ? 2n ** 63n - 1n : BigInt(n) * 9223372036854n - 4611686018427387904n
      lines.push(`{"id":${id},"name":"plant ${n}"${n % 3 === 0 ? `,"tag":"t${n % 7}"` : ''}}\n`)
    }
    writeFileSync(input, lines.join(''))
    const postgres = await (schemas = createTestSchemas(url as string)).create()
    const stores = [`sqlite:${join(dir, 'first.db')}`, postgres, `sqlite:${join(dir, 'last.db')}`]
    const seeded = await plantStore(['import', '--from', input], { DATABASE_URL: stores[0] as string })
    expect(seeded.stdout).toBe(`read ${COUNT}, stored ${COUNT}, present 0, conflicts 0, refused 0\n`)
    for (let step = 0; step < 2; step++) {
      const file = join(dir, `step-${step}.jsonl`)
      const out = await plantStore(['export', '--to', file], { DATABASE_URL: stores[step] as string })
      expect(out.stderr).toBe(`exported ${COUNT} plants\n`)
      const into = await plantStore(['import', '--from', file], { DATABASE_URL: stores[step + 1] as string })
      expect(into.stdout).toBe(`read ${COUNT}, stored ${COUNT}, present 0, conflicts 0, refused 0\n`)
      for (const ran of [out, into]) expect(ran.peakRssKb / 1024, 'peak RSS MB').toBeLessThanOrEqual(150)
    }
    const checks = await Promise.all(stores.map((store) => plantStore(['verify', '--from', input], { DATABASE_URL: store })))
    for (const check of checks) {
      expect(check.stdout).toBe(`export: ${COUNT} plants\nstore: ${COUNT} plants\nidentical ${COUNT}, missing 0, differing 0, refused 0\n`)
      expect(check.peakRssKb / 1024).toBeLessThanOrEqual(150)
    }
  }, 900_000)
})

/** COUNT lines of plants whose names have `chars` UTF-16 units (one 🌱 makes each a two-byte string in V8), in id order. */
async function largePlants (path: string, count: number, chars: number): Promise<void> {
  const out = createWriteStream(path)
  const text = 'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'.repeat(Math.ceil(chars / 63) + 1)
  for (let n = 0; n < count; n++) {
    const name = `🌱${text.slice(n % 63, n % 63 + chars - 2)}`
    const line = `{"id":${BigInt(n) * 9223372036854n - 4611686018427387904n},"name":${JSON.stringify(name)}${n % 3 === 0 ? ',"tag":"t"' : ''}}\n`
    if (!out.write(line)) await new Promise<void>((resolve) => out.once('drain', () => { resolve() }))
  }
  await new Promise<void>((resolve) => out.end(() => { resolve() }))
}

const sha256 = async (path: string): Promise<string> => {
  const digest = createHash('sha256')
  for await (const chunk of createReadStream(path)) digest.update(chunk as Buffer)
  return digest.digest('hex')
}

describe.skipIf(skip !== undefined)('plant-store: plants as large as the API takes', () => {
  const cases = [
    { title: '20,000 plants of 15,000 characters (the default BODY_LIMIT)', count: 20000, chars: 15000, limit: '16384' },
    { title: '200 plants of 1,000,000 characters (BODY_LIMIT=1048576)', count: 200, chars: 1000000, limit: '1048576' }
  ]
  for (const { title, count, chars, limit } of cases) {
    it(`${title}: import and export each under 160 MB of RSS on SQLite and PostgreSQL, the export byte-equal to the input`, async () => {
      const input = join(dir, `large-${count}.jsonl`)
      await largePlants(input, count, chars)
      const postgres = await (schemas ??= createTestSchemas(url as string)).create()
      for (const store of [`sqlite:${join(dir, `large-${count}.db`)}`, postgres]) {
        const env = { DATABASE_URL: store, BODY_LIMIT: limit }
        const imported = await plantStore(['import', '--from', input], env)
        expect(imported.stdout).toBe(`read ${count}, stored ${count}, present 0, conflicts 0, refused 0\n`)
        const output = join(dir, `large-${count}-out.jsonl`)
        const exported = await plantStore(['export', '--to', output], env)
        expect(exported.stderr).toBe(`exported ${count} plants\n`)
        expect(await sha256(output), 'the export is the input, byte for byte').toBe(await sha256(input))
        for (const [step, ran] of [['import', imported], ['export', exported]] as const) {
          expect(ran.peakRssKb / 1024, `${store.split(':')[0]} ${step}: peak RSS MB`).toBeLessThanOrEqual(160)
        }
        rmSync(output)
      }
      rmSync(input)
    }, 900_000)
  }
})
