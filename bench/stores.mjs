// Throughput of POST /plants on each store, and pgbench's for the same single-row insert.
// Usage: npm run build && node bench/stores.mjs [--duration 10] [--connections 16] [--rounds 3] [--targets memory,sqlite,postgres,pgbench]
//   BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) for the PostgreSQL runs.
// Needs wrk and pgbench on PATH. Rounds alternate the targets so that noise from other work on
// the machine falls on all of them alike; the table shows the median of the rounds.
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
    targets: { type: 'string', default: 'memory,sqlite,postgres,pgbench' }
  }
})
const duration = Number(args.duration)
const connections = Number(args.connections)
const rounds = Number(args.rounds)
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const TOKEN = 'bench-stores-token'
const dir = mkdtempSync(join(tmpdir(), 'plant-store-bench-'))
const admin = new pg.Pool({ connectionString: databaseUrl, max: 1 })
const schemas = []

// Each wrk thread numbers its own ids, far apart, so every request creates a new plant.
const lua = join(dir, 'unique-ids.lua')
writeFileSync(lua, `
local threads = 0
function setup (thread) threads = threads + 1; thread:set("base", threads * 1000000000000) end
local n = 0
function request ()
  n = n + 1
  return wrk.format("POST", "/plants", { ["authorization"] = "Bearer ${TOKEN}", ["content-type"] = "application/json" },
    string.format('{"id":%d,"name":"fern","tag":"green"}', base + n))
end
`)

async function newSchema () {
  const name = `bench_stores_${process.pid}_${schemas.length}`
  await admin.query(`CREATE SCHEMA ${name}`)
  schemas.push(name)
  const url = new URL(databaseUrl)
  url.searchParams.set('options', `-c search_path=${name}`)
  return { name, url: url.toString() }
}

async function startServer (env) {
  const child = spawn(process.execPath, ['dist/server.js'], {
    env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', API_TOKENS: TOKEN, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  const url = await new Promise((resolve, reject) => {
    let text = ''
    const onData = (chunk) => {
      text += chunk
      const found = /Server listening at (http:\/\/[^"\s]+)/.exec(text)
      if (found !== null) {
        child.stdout.off('data', onData)
        child.stdout.resume()
        resolve(found[1])
      }
    }
    child.stdout.setEncoding('utf8').on('data', onData)
    child.once('exit', (code) => reject(new Error(`server exited ${code}`)))
  })
  for (let i = 0; i < 100; i++) {
    const response = await fetch(`${url}/readyz`).catch(() => undefined)
    if (response?.status === 200) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return { url, stop: () => new Promise((resolve) => { child.once('exit', resolve); child.kill('SIGTERM') }) }
}

function wrk (url) {
  const out = execFileSync('wrk', ['-t2', `-c${connections}`, `-d${duration}s`, '--timeout', '5s', '-s', lua, `${url}/plants`], { encoding: 'utf8' })
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0)
  const errors = /Socket errors:.*/.exec(out)?.[0]
  if (non2xx > 0 || errors !== undefined) throw new Error(`wrk saw failures: ${non2xx} non-2xx; ${errors ?? ''}\n${out}`)
  return rps
}

const serverTargets = {
  memory: async () => ({ DATABASE_URL: 'memory:', MAX_PLANTS: '16000000' }),
  sqlite: async () => ({ DATABASE_URL: `sqlite:${join(dir, `plants-${Date.now()}.db`)}` }),
  postgres: async () => ({ DATABASE_URL: (await newSchema()).url })
}

async function runServer (target) {
  const server = await startServer(await serverTargets[target]())
  try {
    return wrk(server.url)
  } finally {
    await server.stop()
  }
}

/** pgbench with the insert the store runs per plant, as one statement per transaction. */
async function runPgbench () {
  const { name } = await newSchema()
  await admin.query(`CREATE TABLE ${name}.plants (id bigint PRIMARY KEY, name text NOT NULL, tag text, created_at timestamptz NOT NULL DEFAULT now())`)
  const script = join(dir, 'insert.sql')
  writeFileSync(script, `\\set id random(1, 9000000000000000000)\nINSERT INTO ${name}.plants (id, name, tag) VALUES (:id, 'fern', 'green') ON CONFLICT (id) DO NOTHING;\n`)
  const url = new URL(databaseUrl)
  const out = execFileSync('pgbench', ['-n', '-c', String(connections), '-j', '2', '-T', String(duration), '-f', script,
    '-h', url.hostname, '-p', url.port || '5432', '-U', decodeURIComponent(url.username || 'postgres'), url.pathname.slice(1)], { encoding: 'utf8' })
  return Number(/tps = ([\d.]+)/.exec(out)?.[1])
}

const targets = args.targets.split(',')
const results = Object.fromEntries(targets.map((target) => [target, []]))
try {
  for (let round = 1; round <= rounds; round++) {
    for (const target of targets) {
      const value = target === 'pgbench' ? await runPgbench() : await runServer(target)
      results[target].push(value)
      console.log(`round ${round} ${target}: ${Math.round(value)} /s`)
    }
  }
} finally {
  for (const name of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`)
  await admin.end()
  rmSync(dir, { recursive: true, force: true })
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const m = Object.fromEntries(targets.map((target) => [target, median(results[target])]))
console.log(`\n${connections} connections, ${duration} s per run, median of ${rounds} rounds`)
if (m.memory !== undefined) console.log(`memory   ${Math.round(m.memory)} req/s`)
if (m.sqlite !== undefined) console.log(`sqlite   ${Math.round(m.sqlite)} req/s${m.memory === undefined ? '' : `  = ${(m.sqlite / m.memory).toFixed(2)}x memory (target >= 0.5)`}`)
if (m.postgres !== undefined) console.log(`postgres ${Math.round(m.postgres)} req/s${m.pgbench === undefined ? '' : `  = ${(m.postgres / m.pgbench).toFixed(2)}x pgbench (target >= 0.8)`}`)
if (m.pgbench !== undefined) console.log(`pgbench  ${Math.round(m.pgbench)} tps`)

// Other work on the machine changes from minute to minute: a ratio taken within one round, where
// the runs are seconds apart, is steadier than a ratio of medians.
const ratios = (a, b) => results[a].map((value, i) => value / results[b][i])
if (m.sqlite !== undefined && m.memory !== undefined) console.log(`sqlite/memory per round:    ${ratios('sqlite', 'memory').map((r) => r.toFixed(2)).join(' ')}  median ${median(ratios('sqlite', 'memory')).toFixed(2)}`)
if (m.postgres !== undefined && m.pgbench !== undefined) console.log(`postgres/pgbench per round: ${ratios('postgres', 'pgbench').map((r) => r.toFixed(2)).join(' ')}  median ${median(ratios('postgres', 'pgbench')).toFixed(2)}`)
