import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { docBlock } from '../docs/blocks.js'
import { startServer } from '../e2e/server-process.js'
import { postPlant } from '../e2e/storage-process.js'
import { createSwitchableProxy, createTestSchemas, type TestSchemas } from '../plants/postgres-test-schemas.js'
import { jsonLines, PLANT_STORE, plantStore } from './run.js'

// The commands as an operator runs them: the built bin (npm run build), on real stores.
const url = process.env.TEST_DATABASE_URL
const noPostgres = url === undefined ? 'TEST_DATABASE_URL is not set' : undefined
if (process.env.REQUIRE_POSTGRES === '1' && noPostgres !== undefined) {
  describe('plant-store commands on PostgreSQL', () => {
    it('runs: REQUIRE_POSTGRES=1 turns a skip into a failure', () => { expect.fail(`REQUIRE_POSTGRES=1 but ${noPostgres}`) })
  })
}
if (noPostgres !== undefined) console.warn(`plant-store commands on PostgreSQL skipped: ${noPostgres} (CI sets REQUIRE_POSTGRES=1)`)

const dir = mkdtempSync(join(tmpdir(), 'plant-store-commands-'))
let schemas: TestSchemas | undefined
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await schemas?.dropAll()
})
let files = 0
const file = (name: string): string => join(dir, `${files++}-${name}`)
const sqliteStore = (): string => `sqlite:${file('plants.db')}`
const postgresStore = (): Promise<string> => (schemas ??= createTestSchemas(url as string)).create()

const EXTREMES = [
  { id: -(2n ** 63n), name: 'int64 min' },
  { id: -(2n ** 53n) - 1n, name: 'past -2^53', tag: 'big' },
  { id: 0n, name: 'zéro 🌱', tag: 'quote " backslash \\ newline \n tab \t' },
  { id: 2n ** 53n + 1n, name: 'past 2^53' },
  { id: 2n ** 63n - 1n, name: 'int64 max', tag: 'max' }
]

/** Lines the API refuses, each with the message POST /plants answers. */
const REFUSED: Array<[line: string | Buffer, message: string]> = [
  ['{"id":9223372036854775808,"name":"past int64"}', 'body/id must be an integer between -9223372036854775808 and 9223372036854775807'],
  ['{"id":1.5,"name":"a fraction"}', 'body/id must be an integer between -9223372036854775808 and 9223372036854775807'],
  ['{"id":"7","name":"a string id"}', 'body/id must be an integer between -9223372036854775808 and 9223372036854775807'],
  ['{"id":8}', 'body/name is required'],
  ['{"id":9,"name":"nul \\u0000"}', 'body/name must not contain U+0000 or unpaired surrogates'],
  ['{"id":10,"name":', 'body is not valid JSON'],
  [Buffer.from([0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x31, 0x31, 0x2c, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]),
    'body is not valid UTF-8'],
  [`{"id":12,"name":"${'x'.repeat(20000)}"}`, 'Request body is too large']
]

/** Input with every refused line, then a conflict with `stored` (same id, another name) and the identical plant. */
function mixedInput (stored: { id: bigint, name: string }): { text: Buffer, conflictLine: number, refusedLines: number[] } {
  const lines: Buffer[] = []
  for (const [line] of REFUSED) lines.push(Buffer.isBuffer(line) ? line : Buffer.from(line))
  lines.push(Buffer.from(`{"id":${stored.id},"name":"another name"}`), Buffer.from(jsonLines([stored]).trimEnd()))
  return {
    text: Buffer.concat(lines.flatMap((line) => [line, Buffer.from('\n')])),
    conflictLine: REFUSED.length + 1,
    refusedLines: REFUSED.map((_, index) => index + 1)
  }
}

describe('plant-store commands', () => {
  it('refuse the memory store in one line, before anything else (exit 2)', { timeout: 60000 }, async () => {
    const commands = [['export'], ['import'], ['verify', '--from', 'plants.jsonl'], ['backup', 'plants.db']]
    for (const [args, env] of commands.flatMap((args) => [[args, { DATABASE_URL: 'memory:' }], [args, {}]] as const)) {
      const ran = await plantStore([...args], env)
      expect(ran.status, args.join(' ')).toBe(2)
      expect(ran.stdout).toBe('')
      expect(ran.stderr).toBe('plant-store: DATABASE_URL: memory: lives in the service; use sqlite:<path> or postgres://\n')
    }
  })

  it('refuse a DATABASE_URL of another scheme in one line naming it (exit 2)', async () => {
    const ran = await plantStore(['export'], { DATABASE_URL: 'mysql://nobody@127.0.0.1/plants' })
    expect(ran.status).toBe(2)
    expect(ran.stderr).toBe('plant-store: DATABASE_URL: Expected string to match \'^(memory:$|sqlite:|postgres(ql)?://)\'\n')
  })

  it('answer the error, then the usage line, with exit 2 for an unknown command, flag or a wrong argument', { timeout: 60000 }, async () => {
    const env = { DATABASE_URL: sqliteStore() }
    const cases = [[], ['frob'], ['backup'], ['backup', '-'], ['verify'], ['export', '--from', 'x'], ['import', 'x'], ['backup', 'a', 'b'],
      ['export', '--frob'], ['export', '--to']]
    for (const args of cases) {
      const ran = await plantStore(args, env)
      expect(ran.status, args.join(' ')).toBe(2)
      expect(ran.stdout).toBe('')
      expect(ran.stderr, args.join(' ')).toMatch(/^plant-store: [^\n]+\nusage: plant-store export \[--to FILE\|-\] \| import \[--from FILE\|-\] \| [^\n]+\n$/)
    }
    expect((await plantStore(['export', '--frob'], env)).stderr).toMatch(/^plant-store: Unknown option '--frob'\. /)
  })

  it('--help and -h, for the tool and each command, print the usage on stdout (exit 0); --version the package version', { timeout: 60000 }, async () => {
    for (const args of [['--help'], ['-h'], ['export', '--help'], ['import', '-h'], ['verify', '--help'], ['backup', '-h']]) {
      const ran = await plantStore(args, {})
      expect(ran.stderr).toBe('')
      expect(ran.stdout, args.join(' ')).toMatch(/^usage: plant-store export \[--to FILE\|-\] \| import \[--from FILE\|-\] \| verify --from FILE\|- \| backup FILE\n$/)
      expect(ran.status).toBe(0)
    }
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
    expect(await plantStore(['--version'], {})).toMatchObject({ status: 0, stdout: `plant-store ${version}\n`, stderr: '' })
  })

  it('read - as standard input (import, verify) and standard output (export --to -)', async () => {
    const env = { DATABASE_URL: sqliteStore() }
    const imported = await plantStore(['import', '--from', '-'], env, { text: jsonLines(EXTREMES) })
    expect(imported.stdout).toBe('read 5, stored 5, present 0, conflicts 0, refused 0\n')
    expect((await plantStore(['export', '--to', '-'], env)).stdout).toBe(jsonLines(EXTREMES))
    expect((await plantStore(['verify', '--from', '-'], env, { text: jsonLines(EXTREMES) })).stdout).toMatch(/\nidentical 5, missing 0, differing 0, refused 0\n$/)
    expect(existsSync('-')).toBe(false)
  })

  it('export to standard output removes no file of the current folder (a FILE.partial is only --to\'s)', async () => {
    const env = { DATABASE_URL: sqliteStore() }
    expect((await plantStore(['import'], env, { text: jsonLines(EXTREMES) })).status).toBe(0)
    const cwd = file('cwd')
    mkdirSync(cwd)
    writeFileSync(join(cwd, 'undefined.partial'), 'kept')
    const ran = spawnSync(PLANT_STORE, ['export'], { cwd, env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' })
    expect(ran.stdout).toBe(jsonLines(EXTREMES))
    expect(readFileSync(join(cwd, 'undefined.partial'), 'utf8')).toBe('kept')
  })

  it('read only the variables they use: a bad LOG_LEVEL or PORT stops none, a bad BODY_LIMIT stops import but not export', async () => {
    const env = { DATABASE_URL: sqliteStore(), LOG_LEVEL: 'loud', PORT: 'eighty', API_TOKENS_FILE: '/nonexistent', DATABASE_STATEMENT_TIMEOUT_MS: 'x' }
    expect((await plantStore(['import'], env, { text: jsonLines(EXTREMES) })).status).toBe(0)
    expect((await plantStore(['export'], { ...env, BODY_LIMIT: 'big' })).stdout).toBe(jsonLines(EXTREMES))
    const refused = await plantStore(['import'], { ...env, BODY_LIMIT: 'big' }, { text: jsonLines(EXTREMES) })
    expect(refused).toMatchObject({ status: 2, stdout: '', stderr: 'plant-store: BODY_LIMIT: Expected number\n' })
  })

  it('export | head ends quietly when head closes the pipe: exit 0, nothing on standard error', async () => {
    const env = { DATABASE_URL: sqliteStore() }
    const many = writeTo('pipe.jsonl', jsonLines(Array.from({ length: 100000 }, (_, n) => ({ id: BigInt(n), name: `plant ${n}` }))))
    expect((await plantStore(['import', '--from', many], env)).status).toBe(0)
    const piped = runBlock('plant-store export | head -n 1', env)
    expect(piped).toEqual({ status: 0, stdout: '{"id":0,"name":"plant 0"}\n', stderr: '' })
  })

  it('import tells refused lines and conflicts in line order, a conflict before a later refused line', async () => {
    const env = { DATABASE_URL: sqliteStore() }
    expect((await plantStore(['import'], env, { text: jsonLines([{ id: 1n, name: 'kept' }]) })).status).toBe(0)
    const ran = await plantStore(['import'], env, { text: '{"id":1,"name":"other"}\n{"id":2}\n{"id":3,"name":"new"}\n{"id":4,"name":' })
    expect(ran.stderr).toBe('line 1: id 1 is stored as {"id":1,"name":"kept"}\nline 2: body/name is required\nline 4: body is not valid JSON\n')
    expect(ran.status).toBe(1)
  })

  it('backup refuses to write over the store it copies, however the path is spelled, and leaves it whole', async () => {
    const path = file('self.db')
    const env = { DATABASE_URL: `sqlite:${path}` }
    expect((await plantStore(['import'], env, { text: jsonLines(EXTREMES) })).status).toBe(0)
    for (const target of [path, join(dir, '.', path.slice(dir.length + 1))]) {
      const ran = await plantStore(['backup', target], env)
      expect(ran).toMatchObject({ status: 2, stdout: '', stderr: `plant-store: ${target} is the store itself\n` })
    }
    expect((await plantStore(['export'], env)).stdout).toBe(jsonLines(EXTREMES))
  })

  // strace (Debian's strace) shows the system calls; without it the test skips with its reason, and CI requires it.
  const noStrace = spawnSync('strace', ['-V']).status !== 0 && process.env.REQUIRE_STRACE !== '1'
  if (noStrace) console.warn('export --to\'s fsync test skipped: no strace (CI sets REQUIRE_STRACE=1)')
  it.skipIf(noStrace)('export --to fsyncs FILE.partial, renames it to FILE, then fsyncs the folder (needs strace)', async () => {
    const env = { DATABASE_URL: sqliteStore() }
    expect((await plantStore(['import'], env, { text: jsonLines(EXTREMES) })).status).toBe(0)
    const to = file('synced.jsonl')
    const trace = file('strace.txt')
    const ran = spawnSync('strace', ['-f', '-y', '-e', 'trace=fsync,fdatasync,rename,renameat,renameat2', '-o', trace, PLANT_STORE, 'export', '--to', to],
      { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' })
    expect(ran.status, ran.stderr).toBe(0)
    const calls = readFileSync(trace, 'utf8').split('\n').filter((call) => /fsync|rename/.test(call) && call.includes(dir))
      .map((call) => call.replace(/^\d+ +/, '').replaceAll(dir, 'DIR').replace(/\(\d+</, '(<').replace(/ = 0$/, ''))
    expect(calls.filter((call) => call.includes('synced'))).toEqual([
      `fsync(<DIR/${to.slice(dir.length + 1)}.partial>)`, `rename("DIR/${to.slice(dir.length + 1)}.partial", "DIR/${to.slice(dir.length + 1)}")`
    ])
    expect(calls.at(-1)).toBe('fsync(<DIR>)')
  })

  it('backup refuses a PostgreSQL store and points to pg_dump', async () => {
    const ran = await plantStore(['backup', file('b.db')], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' })
    expect(ran.status).toBe(2)
    expect(ran.stderr).toBe('plant-store: backup copies a SQLite store; for PostgreSQL, use pg_dump\n')
  })

  it('import stores lines as POST /plants would: refused lines and conflicts reported by line, nothing overwritten, exit 1', async () => {
    const env = { DATABASE_URL: sqliteStore() }
    const stored = { id: 2n ** 63n - 1n, name: 'kept' }
    expect((await plantStore(['import'], env, { text: jsonLines([stored]) })).stdout).toBe('read 1, stored 1, present 0, conflicts 0, refused 0\n')
    const { text, conflictLine, refusedLines } = mixedInput(stored)
    const ran = await plantStore(['import', '--from', writeTo('mixed.jsonl', text)], env)
    expect(ran.stderr.split('\n').filter(Boolean)).toEqual([
      ...REFUSED.map(([, message], index) => `line ${refusedLines[index]}: ${message}`),
      `line ${conflictLine}: id ${stored.id} is stored as {"id":${stored.id},"name":"kept"}`
    ])
    expect(ran.stdout).toBe(`read ${REFUSED.length + 2}, stored 0, present 1, conflicts 1, refused ${REFUSED.length}\n`)
    expect(ran.status).toBe(1)
    expect((await plantStore(['export'], env)).stdout).toBe(jsonLines([stored]))
  })

  it('verify reports the first ten differences by line on standard error, every count on standard output, exit 1', async () => {
    const env = { DATABASE_URL: sqliteStore() }
    expect((await plantStore(['import'], env, { text: jsonLines([{ id: 1n, name: 'stored' }]) })).status).toBe(0)
    const input = writeTo('twelve.jsonl', jsonLines(Array.from({ length: 12 }, (_, n) => ({ id: BigInt(n + 1), name: 'other' }))))
    const ran = await plantStore(['verify', '--from', input], env)
    expect(ran.stderr.split('\n').filter(Boolean)).toEqual([
      'line 1: id 1 is stored as {"id":1,"name":"stored"}',
      ...Array.from({ length: 9 }, (_, n) => `line ${n + 2}: id ${n + 2} is not stored`)
    ])
    expect(ran.stdout).toBe('export: 12 plants\nstore: 1 plants\nidentical 0, missing 11, differing 1, refused 0\n')
    expect(ran.status).toBe(1)
  })

  it('import refuses a line far past BODY_LIMIT within 150 MB, and goes on with the next line', async () => {
    const huge = `{"id":1,"name":"${'x'.repeat(64 * 1024 * 1024)}"}\n{"id":2,"name":"after"}\n`
    const ran = await plantStore(['import', '--from', writeTo('huge.jsonl', huge)], { DATABASE_URL: sqliteStore() })
    expect(ran.stderr).toBe('line 1: Request body is too large\n')
    expect(ran.stdout).toBe('read 2, stored 1, present 0, conflicts 0, refused 1\n')
    expect(ran.peakRssKb / 1024, 'peak RSS MB').toBeLessThanOrEqual(150)
  })

  it('import shows no progress off a terminal, and plants, plants per second and time left on one', { timeout: 120000 }, async () => {
    // Ids of 19 digits take the parser's exact path: a million make a run of some seconds, for progress each second.
    const input = writeTo('many.jsonl', jsonLines(Array.from({ length: 1000000 }, (_, n) =>
      ({ id: BigInt(n) * 5000000000000n + 1000000000000000000n, name: `plant ${n}` }))))
    const off = await plantStore(['import', '--from', input], { DATABASE_URL: sqliteStore() })
    expect(off.stderr).toBe('')
    expect(off.stdout).toBe('read 1000000, stored 1000000, present 0, conflicts 0, refused 0\n')
    // script(1) gives the command a terminal; its output is the terminal's.
    const onTty = await plantStoreOnTerminal(['import', '--from', input], sqliteStore())
    expect(onTty).toMatch(/\r\d+ plants, \d+\/s, \d+ s left/)
    expect(onTty).not.toMatch(/NaN|Infinity|-\d/)
    // The last progress line is erased before the summary, and nothing is drawn after it.
    const erase = '\r\u001b[K'
    expect(onTty).toContain(erase)
    expect(onTty.split(erase).at(-1)).toBe('read 1000000, stored 1000000, present 0, conflicts 0, refused 0\r\n')
  })

  it('an import killed (kill -9) at a random moment and run again: its store exports the same bytes as an uninterrupted one (SQLite)', async () => {
    await killedImport(sqliteStore(), sqliteStore())
  }, 120000)

  it('backup under served creates passes integrity_check, and a service on it has every plant acknowledged before it began', async () => {
    const path = file('served.db')
    const backup = file('backup.db')
    // A store of some size, so that the copy takes a while under the load.
    const fill = writeTo('fill.jsonl', jsonLines(Array.from({ length: 300000 }, (_, n) => ({ id: BigInt(n + 1e9), name: `plant ${n}`, tag: 'fill' }))))
    expect((await plantStore(['import', '--from', fill], { DATABASE_URL: `sqlite:${path}` })).status).toBe(0)
    const server = await startServer({ DATABASE_URL: `sqlite:${path}` })
    const acknowledged: bigint[] = []
    let stop = false
    let next = 0
    const writers = Array.from({ length: 8 }, async () => {
      while (!stop) {
        const id = BigInt(next++)
        const reply = await postPlant(server.url, id, `served ${id}`)
        if (reply.status !== 200) throw new Error(`create answered ${reply.status}`)
        acknowledged.push(id)
      }
    })
    while (acknowledged.length < 2000) await new Promise((resolve) => setTimeout(resolve, 50))
    const before = [...acknowledged]
    const ran = await plantStore(['backup', backup], { DATABASE_URL: `sqlite:${path}` })
    const during = acknowledged.length - before.length
    // The load goes on after the copy, as it would.
    await new Promise((resolve) => setTimeout(resolve, 500))
    stop = true
    await Promise.all(writers)
    server.child.kill('SIGTERM')
    await server.exited
    expect(ran.stderr).toBe('')
    expect(ran.status).toBe(0)
    expect(ran.stdout).toMatch(new RegExp(`^backed up \\d+ plants to ${backup}, integrity_check ok\\n$`))
    expect(during, 'creates acknowledged while the backup ran').toBeGreaterThan(0)
    expect(existsSync(`${backup}.partial`)).toBe(false)
    const copy = new Database(backup, { readonly: true })
    expect(copy.pragma('integrity_check', { simple: true })).toBe('ok')
    copy.close()
    const restored = await startServer({ DATABASE_URL: `sqlite:${backup}` })
    for (const id of before) {
      // 409 for another name: the plant is stored, as it was.
      expect((await postPlant(restored.url, id, 'another name')).status, `plant ${id}`).toBe(409)
    }
    expect((await postPlant(restored.url, before[0] as bigint, `served ${before[0]}`)).status).toBe(200)
  }, 120000)
})

describe.skipIf(noPostgres !== undefined)('plant-store commands between SQLite and PostgreSQL', () => {
  it('SQLite → PostgreSQL → SQLite keeps every plant exactly, the int64 extremes included: equal exports, each store verified identical', async () => {
    const [first, middle, last] = [sqliteStore(), await postgresStore(), sqliteStore()]
    expect((await plantStore(['import'], { DATABASE_URL: first }, { text: jsonLines(EXTREMES) })).status).toBe(0)
    const exports: string[] = []
    for (const [from, to] of [[first, middle], [middle, last], [last, undefined]] as const) {
      const out = await plantStore(['export'], { DATABASE_URL: from })
      expect(out.status).toBe(0)
      expect(out.stderr).toBe(`exported ${EXTREMES.length} plants\n`)
      exports.push(out.stdout)
      if (to !== undefined) expect((await plantStore(['import'], { DATABASE_URL: to }, { text: out.stdout })).status).toBe(0)
    }
    expect(exports[0]).toBe(jsonLines(EXTREMES))
    expect(new Set(exports).size).toBe(1)
    const exported = writeTo('extremes.jsonl', exports[0] as string)
    const checks = await Promise.all([first, middle, last].map((store) => plantStore(['verify', '--from', exported], { DATABASE_URL: store })))
    for (const check of checks) {
      expect(check.stdout).toBe('export: 5 plants\nstore: 5 plants\nidentical 5, missing 0, differing 0, refused 0\n')
      expect(check.status).toBe(0)
    }
  })

  for (const direction of ['SQLite → PostgreSQL', 'PostgreSQL → SQLite']) {
    it(`${direction}: conflicts and refused lines reported, the target's plants never overwritten, verify shows the difference`, async () => {
      const [source, target] = direction === 'SQLite → PostgreSQL'
        ? [sqliteStore(), await postgresStore()]
        : [await postgresStore(), sqliteStore()]
      expect((await plantStore(['import'], { DATABASE_URL: source }, { text: jsonLines(EXTREMES) })).status).toBe(0)
      const held = { id: 2n ** 63n - 1n, name: 'the target\'s own' }
      expect((await plantStore(['import'], { DATABASE_URL: target }, { text: jsonLines([held, EXTREMES[0] as typeof held]) })).status).toBe(0)
      const exported = (await plantStore(['export'], { DATABASE_URL: source })).stdout
      const { text, refusedLines } = mixedInput({ id: 5n, name: 'five' })
      const input = Buffer.concat([Buffer.from(exported), text])
      const ran = await plantStore(['import', '--from', writeTo('move.jsonl', input)], { DATABASE_URL: target })
      expect(ran.stdout).toBe(`read ${EXTREMES.length + REFUSED.length + 2}, stored ${EXTREMES.length - 2 + 1}, ` +
        `present 1, conflicts 2, refused ${REFUSED.length}\n`)
      const reports = ran.stderr.split('\n').filter(Boolean)
      expect(reports).toContain(`line ${EXTREMES.length}: id ${held.id} is stored as {"id":${held.id},"name":"the target's own"}`)
      expect(reports).toContain(`line ${EXTREMES.length + REFUSED.length + 2}: id 5 is stored as {"id":5,"name":"another name"}`)
      for (const line of refusedLines) expect(reports).toContainEqual(expect.stringMatching(new RegExp(`^line ${EXTREMES.length + line}: `)))
      expect(ran.status).toBe(1)
      const after = (await plantStore(['export'], { DATABASE_URL: target })).stdout
      expect(after).toContain(jsonLines([held]))
      const check = await plantStore(['verify', '--from', writeTo('source.jsonl', exported)], { DATABASE_URL: target })
      expect(check.stderr).toBe(`line ${EXTREMES.length}: id ${held.id} is stored as {"id":${held.id},"name":"the target's own"}\n`)
      expect(check.stdout).toMatch(/\nidentical 4, missing 0, differing 1, refused 0\n$/)
      expect(check.status).toBe(1)
    })
  }

  it('a connection failure names the host and gives the server\'s words, for import as for export (exit 2)', async () => {
    const target = Object.assign(new URL(url as string), { pathname: `/plants_none_${process.pid}` })
    for (const command of ['import', 'export']) {
      const ran = await plantStore([command], { DATABASE_URL: target.toString() }, { text: jsonLines(EXTREMES) })
      expect(ran.stderr).toBe(`plant-store: DATABASE_URL: ${target.hostname}:${target.port || 5432}: ` +
        `database "plants_none_${process.pid}" does not exist\n`)
      expect(ran.status).toBe(2)
    }
  })

  it('a server that stalls, before or during a command, ends it with exit 2 within DATABASE_STATEMENT_TIMEOUT_MS', { timeout: 60000 }, async () => {
    const { hostname, port } = new URL(url as string)
    const proxy = await createSwitchableProxy({ host: hostname, port: Number(port || 5432) })
    await proxy.up()
    try {
      const store = await (schemas ??= createTestSchemas(url as string)).create({ port: proxy.port })
      const env = { DATABASE_URL: store, DATABASE_STATEMENT_TIMEOUT_MS: '1000' }
      const input = writeTo('stall.jsonl', jsonLines(Array.from({ length: 300000 }, (_, n) => ({ id: BigInt(n), name: `plant ${n}` }))))
      // During: the import is under way (its first batches stored) when the server stops answering.
      const stored = `SELECT EXISTS (SELECT FROM ${schemas.schemaOf(store)}.plants) AS some`
      const during = await plantStore(['import', '--from', input], env, undefined, () => {
        const waiting = setInterval(() => {
          void schemas?.query(stored).then(({ rows }) => {
            if (rows[0]?.some !== true) return
            proxy.freeze()
            clearInterval(waiting)
          }, () => {})
        }, 50)
      })
      expect(during.stderr).toBe('plant-store: Query read timeout\n')
      expect(during.status).toBe(2)
      // Before: the connection is accepted and never answered.
      for (const args of [['export'], ['import', '--from', input], ['verify', '--from', input], ['export', '--to', file('stalled.jsonl')]]) {
        const started = performance.now()
        const ran = await plantStore(args, env)
        expect(ran.stderr, args.join(' ')).toMatch(/^plant-store: DATABASE_URL: 127\.0\.0\.1:\d+: Connection terminated due to connection timeout\n$/)
        expect(ran.status).toBe(2)
        // 1 s, with the process's start and exit on a loaded machine.
        expect(performance.now() - started).toBeLessThan(6000)
      }
      proxy.thaw()
      // An export to a file that the server stops feeding half-way leaves neither FILE nor FILE.partial.
      const to = file('half.jsonl')
      const half = await plantStore(['export', '--to', to], env, undefined, () => {
        const waiting = setInterval(() => {
          if (!existsSync(`${to}.partial`)) return
          proxy.freeze()
          clearInterval(waiting)
        }, 10)
      })
      expect(half.status, half.stderr).toBe(2)
      expect([existsSync(to), existsSync(`${to}.partial`)]).toEqual([false, false])
    } finally {
      proxy.thaw()
      await proxy.down()
    }
  })

  it('an import killed (kill -9) at a random moment and run again: its store exports the same bytes as an uninterrupted one (PostgreSQL)', async () => {
    await killedImport(await postgresStore(), await postgresStore())
  }, 120000)
})

describe('plant-store export while the service creates plants', () => {
  for (const kind of ['SQLite', 'PostgreSQL']) {
    it.skipIf(kind === 'PostgreSQL' && noPostgres !== undefined)(`${kind}: one snapshot, every create wholly in it or wholly absent`, {
      timeout: 120000
    }, async () => {
      const store = kind === 'SQLite' ? sqliteStore() : await postgresStore()
      // Pages enough to fill the pipe: the plants below sit between the two writers' ids.
      const fill = writeTo('middle.jsonl', jsonLines(Array.from({ length: 200000 }, (_, n) => ({ id: BigInt(n + 1), name: 'fill' }))))
      expect((await plantStore(['import', '--from', fill], { DATABASE_URL: store })).status).toBe(0)
      const server = await startServer({ DATABASE_URL: store })
      // One writer, in a known order: a_i (id -i, read in the export's first pages), then b_i (id 10^9 + i, read last).
      let stop = false
      const writer = (async () => {
        for (let i = 1; !stop; i++) {
          for (const id of [BigInt(-i), BigInt(1e9 + i)]) expect((await postPlant(server.url, id, 'new')).status).toBe(200)
        }
      })()
      await new Promise((resolve) => setTimeout(resolve, 300))
      // A reader that stops for 1.5 s after the first lines: the export waits mid-way, with creates going on.
      const out = await plantStore(['export'], { DATABASE_URL: store }, undefined, (child) => {
        child.stdout?.once('data', () => {
          child.stdout?.pause()
          setTimeout(() => child.stdout?.resume(), 1500)
        })
      })
      stop = true
      await writer
      server.child.kill('SIGTERM')
      await server.exited
      const ids = out.stdout.split('\n').filter(Boolean).map((line) => BigInt(/"id":(-?\d+)/.exec(line)?.[1] as string))
      const a = ids.filter((id) => id < 0n).length
      const b = ids.filter((id) => id > 1000000000n).length
      expect(a, 'creates before the export').toBeGreaterThan(0)
      // A snapshot holds a prefix of the creates: b_i only after a_i, and a_(i+1) only after b_i.
      expect([a, a - 1]).toContain(b)
      expect(ids.length).toBe(200000 + a + b)
    })
  }
})

function writeTo (name: string, contents: string | Buffer): string {
  const path = file(name)
  writeFileSync(path, contents)
  return path
}

async function plantStoreOnTerminal (args: string[], store: string): Promise<string> {
  const child = spawn('script', ['-qefc', [PLANT_STORE, ...args].join(' '), '/dev/null'],
    { env: { PATH: process.env.PATH, DATABASE_URL: store }, stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  await new Promise((resolve) => child.once('close', resolve))
  return output
}

/** kill -9 of an import at a random moment of its run, then the same import again: compared with one left alone. */
async function killedImport (reference: string, killed: string): Promise<void> {
  const count = 300000
  const input = writeTo('kill.jsonl', jsonLines(Array.from({ length: count }, (_, n) =>
    ({ id: BigInt(n) * 30000000000000n - 2n ** 62n, name: `plant ${n}`, ...(n % 3 === 0 ? { tag: 't' } : {}) }))))
  const started = performance.now()
  const whole = await plantStore(['import', '--from', input], { DATABASE_URL: reference })
  const duration = performance.now() - started
  expect(whole.stdout).toBe(`read ${count}, stored ${count}, present 0, conflicts 0, refused 0\n`)
  const delay = duration * (0.15 + 0.5 * Math.random())
  const cut = await plantStore(['import', '--from', input], { DATABASE_URL: killed }, undefined, (child) => {
    setTimeout(() => child.kill('SIGKILL'), delay)
  })
  expect(cut.signal, `killed after ${Math.round(delay)} of ${Math.round(duration)} ms`).toBe('SIGKILL')
  const again = await plantStore(['import', '--from', input], { DATABASE_URL: killed })
  const [, stored, present] = /^read \d+, stored (\d+), present (\d+), conflicts 0, refused 0\n$/.exec(again.stdout) ?? []
  expect(Number(stored) + Number(present)).toBe(count)
  expect(again.status).toBe(0)
  const exports = [file('reference.jsonl'), file('killed.jsonl')]
  for (const [n, store] of [reference, killed].entries()) {
    expect((await plantStore(['export', '--to', exports[n] as string], { DATABASE_URL: store })).status).toBe(0)
  }
  // Compared as bytes: a diff of 300,000 lines would drown the report.
  expect(readFileSync(exports[1] as string).equals(readFileSync(exports[0] as string)), 'exports byte-equal').toBe(true)
  const check = await plantStore(['verify', '--from', input], { DATABASE_URL: killed })
  expect(check.stdout).toBe(`export: ${count} plants\nstore: ${count} plants\nidentical ${count}, missing 0, differing 0, refused 0\n`)
}

/** Runs a block of docs/production.md with bash, `plant-store` on the PATH as in the image, in a folder of its own. */
function runBlock (block: string, env: Record<string, string>): { status: number | null, stdout: string, stderr: string } {
  const bin = file('bin')
  mkdirSync(bin)
  symlinkSync(PLANT_STORE, join(bin, 'plant-store'))
  const cwd = file('work')
  mkdirSync(cwd)
  // --norc: bash reads bashrc when its standard input is a socket, as Node's pipes are.
  const ran = spawnSync('bash', ['--norc', '-euo', 'pipefail', '-c', block],
    { cwd, env: { PATH: `${bin}:${process.env.PATH}`, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  return { status: ran.status, stdout: ran.stdout, stderr: ran.stderr }
}

describe('docs/production.md: backing up, restoring, moving and reading plants, as written', () => {
  it('backup-sqlite, then restore-sqlite over a store that changed since: verify finds every plant of the backup', async () => {
    const store = file('live.db')
    const env = { DATABASE_URL: `sqlite:${store}`, BACKUP: file('backup.db') }
    expect((await plantStore(['import'], env, { text: jsonLines(EXTREMES) })).status).toBe(0)
    const backup = runBlock(docBlock('docs/production.md', 'backup-sqlite'), env)
    expect(backup.stdout).toMatch(/^backed up 5 plants to .*backup\.db, integrity_check ok\n$/)
    expect(backup.status).toBe(0)
    expect((await plantStore(['import'], env, { text: jsonLines([{ id: 42n, name: 'after the backup' }]) })).status).toBe(0)
    const restore = runBlock(docBlock('docs/production.md', 'restore-sqlite'), env)
    expect(restore.stdout.split('\n').slice(-2)[0]).toBe('identical 5, missing 0, differing 0, refused 0')
    expect(restore.status).toBe(0)
    expect((await plantStore(['export'], env)).stdout).toBe(jsonLines(EXTREMES))
  })

  it('read-plants finds plants by tag in the export', async () => {
    const env = { DATABASE_URL: sqliteStore() }
    const plants = [{ id: 1n, name: 'Monstera', tag: 'tropical' }, { id: 2n, name: 'Cactus', tag: 'desert' }]
    expect((await plantStore(['import'], env, { text: jsonLines(plants) })).status).toBe(0)
    const read = runBlock(docBlock('docs/production.md', 'read-plants'), env)
    expect(read.stdout).toBe(jsonLines([plants[0] as typeof plants[0]]))
    expect(read.status).toBe(0)
  })

  it.skipIf(noPostgres !== undefined)('move-stores: SQLite to PostgreSQL and back, verified', async () => {
    const [sqlite, postgres] = [sqliteStore(), await postgresStore()]
    expect((await plantStore(['import'], { DATABASE_URL: sqlite }, { text: jsonLines(EXTREMES) })).status).toBe(0)
    for (const [from, to] of [[sqlite, postgres], [postgres, sqliteStore()]]) {
      const moved = runBlock(docBlock('docs/production.md', 'move-stores'), { FROM_URL: from as string, TO_URL: to as string })
      expect(moved.stdout).toContain('read 5, stored 5, present 0, conflicts 0, refused 0\n')
      expect(moved.stdout).toContain('identical 5, missing 0, differing 0, refused 0\n')
      expect(moved.status).toBe(0)
    }
  })
})
