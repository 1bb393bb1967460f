import { spawn, spawnSync } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'

const BENCH = fileURLToPath(new URL('../../bench/', import.meta.url))
const wrk = spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined

/** A server that answers every request 200 and keeps its body as sent. */
async function recorder (): Promise<{ server: Server, url: string, bodies: string[] }> {
  const bodies: string[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8').on('data', (chunk: string) => { body += chunk }).on('end', () => {
      bodies.push(body)
      res.end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/plants`, bodies }
}

function runLoad (argv: string[], ids: string): Promise<number | null> {
  const child = spawn(argv[0] as string, argv.slice(1), { env: { ...process.env, BENCH_IDS: ids, BENCH_ID_BASE: '16777216' }, stdio: 'ignore' })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', resolve)
  })
}

/** The id literal of each body, as text: JSON.parse would round a 19-digit one. */
const idsOf = (bodies: string[]) => bodies.map((body) => {
  expect(body).toMatch(/^\{"id":\d+,"name":"bench plant","tag":"bench tag"\}$/)
  return (/"id":(\d+)/.exec(body) as RegExpExecArray)[1] as string
})

/**
 * What each id mix must send: small ids below 2^32, 19-digit ids within int64, every id new, each body with a tag;
 * `snowflake` ids consecutive, so that neighbours share a double, `spaced` ones a double each.
 */
function expectMix (ids: string, sent: string[]) {
  expect(sent.length).toBeGreaterThanOrEqual(100)
  expect(new Set(sent).size).toBe(sent.length)
  const small = sent.filter((id) => BigInt(id) < 2n ** 32n)
  const snowflake = sent.filter((id) => id.length === 19 && BigInt(id) < 2n ** 63n)
  expect(small.length + snowflake.length).toBe(sent.length)
  if (ids === 'small') expect(snowflake).toEqual([])
  if (ids === 'snowflake' || ids === 'spaced') expect(small).toEqual([])
  const doubles = new Set(snowflake.map(Number)).size
  if (ids === 'snowflake') expect(doubles).toBeLessThan(snowflake.length / 8)
  if (ids === 'spaced') expect(doubles).toBe(snowflake.length)
  if (ids === 'mixed') expect(Math.abs(small.length - snowflake.length)).toBeLessThanOrEqual(1)
}

let open: Server | undefined
afterEach(async () => {
  await new Promise((resolve) => open?.close(resolve) ?? resolve(undefined))
  open = undefined
})

describe('the bench\'s requests: --ids small|snowflake|mixed|spaced', () => {
  for (const ids of ['small', 'snowflake', 'mixed', 'spaced']) {
    it(`bench/load.js (autocannon) sends ${ids} ids, each new, each body with a tag`, async () => {
      const { server, url, bodies } = await recorder()
      open = server
      expect(await runLoad([process.execPath, `${BENCH}load.js`, url, '--connections', '4', '--requests', '200'], ids)).toBe(0)
      expectMix(ids, idsOf(bodies))
    }, 20000)
  }

  for (const ids of ['small', 'snowflake', 'mixed', 'spaced']) {
    it.skipIf(!wrk && process.env.REQUIRE_WRK !== '1')(
      `bench/ids.lua (wrk) sends ${ids} ids, each new, each body with a tag${wrk ? '' : ' (skipped: wrk is not installed)'}`, async () => {
        const { server, url, bodies } = await recorder()
        open = server
        expect(await runLoad(['wrk', '-t1', '-c4', '-d1s', '-s', `${BENCH}ids.lua`, url], ids)).toBe(0)
        expectMix(ids, idsOf(bodies))
      }, 20000)
  }

  it('npm run bench and bench:instructions refuse an unknown --ids with status 2 and name the choices', () => {
    for (const script of ['run.js', 'instructions.js']) {
      const result = spawnSync(process.execPath, [`${BENCH}${script}`, '--ids', 'huge'], { encoding: 'utf8', timeout: 20000 })
      expect([result.status, result.stderr]).toEqual([2, 'bench: --ids must be one of small, snowflake, mixed, spaced, got huge\n'])
    }
  })
})
