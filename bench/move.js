// npm run bench:move: plants out of one store and into another with the service's own commands.
// N plants (19-digit ids spread over int64, half with a tag) are made in a SQLite store with the sqlite3
// shell, then: `plant-store export` to a file; `plant-store export | plant-store import` into an empty
// PostgreSQL database (end to end, each side timed and its peak RSS read by /usr/bin/time); beside it,
// `plant-store import` of the exported file into another, beside `psql \copy` of the same rows (CSV) into the
// same table of a third (file against file: the ratio); `plant-store import` of the file into an empty SQLite
// store, beside the sqlite3 shell's `.import` of the same rows; these pairs `--tries` times in turn (default 2),
// each side's fastest try kept. Then a restore drill for each store, as docs/production.md gives it, from the
// backup to a service answering /readyz 200: SQLite, `plant-store backup`'s file copied into place, `verify`
// against the export, the service started; beside it, sqlite3's `.restore` of the same backup. PostgreSQL, a
// `pg_dump --format=custom` of the imported database restored with `pg_restore` into an empty one, `verify`,
// the service started; beside it, `pg_restore` alone. Both drills take the fastest of `--tries`.
// Result: bench/results/move.md (machine, date, command).
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { freshDatabase, postgresProblem } from './postgres.js'
import { call, fmt, machine, RESULTS, serviceEnv, sleep, stopServer } from './util.js'

const BIN = new URL('../dist/commands/plant-store.js', import.meta.url).pathname
const options = { count: { type: 'string', default: '10000000' }, tries: { type: 'string', default: '2' } }
const { values: args } = parseArgs({ options })
const count = Number(args.count)
const tries = Number(args.tries)
const problem = await postgresProblem()
if (problem !== undefined) throw new Error(problem)
const dir = mkdtempSync(join(tmpdir(), 'plant-store-move-'))
const sh = (script, env = {}) => execFileSync('bash', ['-o', 'pipefail', '-c', script],
  { env: { ...process.env, ...env }, cwd: dir, stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 26 }).toString()
/** Runs a shell line under /usr/bin/time for each `T(name)` marker; returns { name: { seconds, rssMB } }. */
function timed (script, env) {
  const names = [...script.matchAll(/T\((\w+)\)/g)].map((match) => match[1])
  sh(script.replace(/T\((\w+)\)/g, '/usr/bin/time -f "%e %M" -o $1.time'), env)
  return Object.fromEntries(names.map((name) => {
    const [seconds, kb] = readFileSync(join(dir, `${name}.time`), 'utf8').trim().split('\n').at(-1).split(' ').map(Number)
    return [name, { seconds, rssMB: kb / 1024 }]
  }))
}

/**
 * Each step `tries` times, the steps in turn: its fastest try (other work on a shared machine only ever slows one)
 * and its highest peak RSS.
 */
async function best (steps) {
  const results = {}
  for (let n = 0; n < tries; n++) {
    for (const [name, step] of Object.entries(steps)) {
      const result = await step()
      const kept = results[name] ?? result
      results[name] = { ...(result.seconds < kept.seconds ? result : kept), rssMB: Math.max(kept.rssMB, result.rssMB) }
    }
  }
  return results
}

/** Seconds from the spawn of the built service on `url` to its first /readyz 200 (polled every 10 ms); then stops it. */
async function serviceReady (url) {
  const started = process.hrtime.bigint()
  const child = spawn(process.execPath, [new URL('../dist/server.js', import.meta.url).pathname],
    { env: serviceEnv({ DATABASE_URL: url, PORT: '0', HOST: '127.0.0.1', METRICS_PORT: '' }), cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] })
  try {
    const port = await new Promise((resolve, reject) => {
      let text = ''
      child.stdout.setEncoding('utf8').on('data', (chunk) => {
        text += chunk
        const found = /Server listening at http:\/\/[^:]+:(\d+)/.exec(text)?.[1]
        if (found !== undefined) resolve(Number(found))
      })
      child.once('exit', (code) => reject(new Error(`the service exited (${code}) before it listened`)))
    })
    child.stdout.resume()
    for (;;) {
      if ((await call(port, 'GET', '/readyz').catch(() => ({ status: 0 }))).status === 200) break
      await sleep(10)
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9
    // The service serves the restored plants: the export's first one replays (200), another under its id is a 409.
    // The line as it is: JSON.parse would round its 19-digit id.
    const first = sh('head -n 1 plants.jsonl').trim()
    const statuses = [(await call(port, 'POST', '/plants', first)).status,
      (await call(port, 'POST', '/plants', first.replace(/"name":"/, '"name":"not '))).status]
    if (statuses.join() !== '200,409') throw new Error(`the restored store answered ${statuses.join(', ')} for its first plant`)
    return seconds
  } finally {
    await stopServer(child)
  }
}

/** Seconds a shell line takes. */
const seconds = (script, env) => {
  const started = process.hrtime.bigint()
  sh(script, env)
  return Number(process.hrtime.bigint() - started) / 1e9
}

/** A restore drill: `restore()` and `verify` timed, then the service to /readyz 200; { seconds, parts }. */
async function drill (url, restore) {
  const restoring = await restore()
  const verifying = seconds(`"${BIN}" verify --from plants.jsonl >/dev/null`, { DATABASE_URL: url })
  const ready = await serviceReady(url)
  return { seconds: restoring + verifying + ready, parts: [restoring, verifying, ready] }
}
const partsOf = (steps, result) => steps.map((step, i) => `${step} ${fmt(result.parts[i], 1)} s`).join(', ')

const rows = []
const loadBefore = loadavg()[0]
const row = (what, result, extra = '') => rows.push(`| ${what} | ${fmt(result.seconds, 1)} | ${fmt(count / result.seconds)} | ` +
  `${result.rssMB === undefined ? '–' : fmt(result.rssMB)} | ${extra} |`)
const databases = []
try {
  console.log(`making ${fmt(count)} plants in SQLite`)
  sh(`"${BIN}" import --from /dev/null >/dev/null`, { DATABASE_URL: 'sqlite:source.db' })
  sh(`sqlite3 source.db "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count}) ` +
    'INSERT INTO plants (id, name, tag) SELECT i * 922337203685 - 4611686018427387904, \'plant \' || i, ' +
    'CASE WHEN i % 2 = 0 THEN \'tag \' || (i % 100) END FROM n"')
  sh('sqlite3 -csv source.db "SELECT id, name, tag FROM plants ORDER BY id" > rows.csv')
  sh('sqlite3 -csv source.db "SELECT id, name, tag, created_at FROM plants ORDER BY id" > rows-sqlite.csv')

  console.log('export to a file')
  const exported = timed(`T(export) "${BIN}" export --to plants.jsonl 2>/dev/null`, { DATABASE_URL: 'sqlite:source.db' })
  row('`plant-store export` of SQLite to a file', exported.export)

  console.log('export | import into PostgreSQL')
  const target = await freshDatabase('move')
  databases.push(target)
  const piped = timed(`T(export) "${BIN}" export 2>/dev/null | DATABASE_URL="${target.url}" T(import) "${BIN}" import`,
    { DATABASE_URL: 'sqlite:source.db' })
  // The import's rate against \copy's from the same kind of input, a file, with no export sharing the two cores.
  console.log('import of the file into PostgreSQL, beside psql \\copy')
  const intoPostgres = await best({
    import: async () => {
      const into = await freshDatabase(`file${databases.length}`)
      databases.push(into)
      return timed(`T(import) "${BIN}" import --from plants.jsonl`, { DATABASE_URL: into.url }).import
    },
    copy: async () => {
      const into = await freshDatabase(`copy${databases.length}`)
      databases.push(into)
      sh(`"${BIN}" import --from /dev/null >/dev/null`, { DATABASE_URL: into.url })
      return timed(`T(copy) psql -q "${into.url}" -c "\\copy plants (id, name, tag) FROM 'rows.csv' CSV"`).copy
    }
  })
  const [filed, copy] = [intoPostgres.import, intoPostgres.copy]
  const end = Math.max(piped.export.seconds, piped.import.seconds)
  row('`plant-store export` (SQLite) piped into…', piped.export, `end to end ${fmt(end, 1)} s`)
  row('…`plant-store import` (PostgreSQL, empty)', piped.import, `${fmt(copy.seconds / piped.import.seconds, 2)}× \\copy`)
  row('`plant-store import` of the file (PostgreSQL, empty)', filed, `**${fmt(copy.seconds / filed.seconds, 2)}× \\copy**`)
  row('`psql \\copy` of the same rows (CSV) into the same table', copy)

  console.log('import into SQLite, beside sqlite3 .import')
  let files = 0
  const intoSqlite = await best({
    import: () => timed(`T(import) "${BIN}" import --from plants.jsonl`, { DATABASE_URL: `sqlite:target${files++}.db` }).import,
    shell: () => {
      sh(`"${BIN}" import --from /dev/null >/dev/null`, { DATABASE_URL: `sqlite:shell${files}.db` })
      return timed(`T(shell) sqlite3 shell${files++}.db ".import --csv rows-sqlite.csv plants"`).shell
    }
  })
  const [imported, shell] = [intoSqlite.import, intoSqlite.shell]
  row('`plant-store import` of the file (SQLite, empty)', imported, `**${fmt(shell.seconds / imported.seconds, 2)}× .import**`)
  row('sqlite3 `.import` of the same rows (CSV) into the same table', shell)

  console.log('restore drill: SQLite, beside sqlite3 .restore')
  sh(`"${BIN}" backup backup.db >/dev/null`, { DATABASE_URL: 'sqlite:source.db' })
  const sqliteDrill = await best({
    drill: () => drill('sqlite:restored.db', () => seconds('rm -f restored.db restored.db-wal restored.db-shm && cp backup.db restored.db')),
    native: () => {
      sh('rm -f native.db')
      return { seconds: seconds('sqlite3 native.db ".restore backup.db"') }
    }
  })
  row('restore drill (SQLite): `cp` of the backup, `verify`, service to /readyz 200', sqliteDrill.drill,
    `${partsOf(['cp', 'verify', 'ready'], sqliteDrill.drill)}; **${fmt(sqliteDrill.drill.seconds / sqliteDrill.native.seconds, 1)}× .restore**`)
  row('sqlite3 `.restore` of the same backup', sqliteDrill.native)

  console.log('restore drill: PostgreSQL, beside pg_restore alone')
  sh(`pg_dump --format=custom --file=backup.dump "${target.url}"`)
  /** `work` on an empty database, dropped after (a restored copy holds as much disk as the source). */
  const onEmpty = async (work) => {
    const into = await freshDatabase(`restore${databases.length}`)
    try { return await work(into.url) } finally { await into.drop() }
  }
  const pgRestore = (url) => seconds(`pg_restore --no-owner --exit-on-error --dbname="${url}" backup.dump`)
  const pgDrill = await best({
    drill: () => onEmpty((url) => drill(url, () => pgRestore(url))),
    native: () => onEmpty((url) => ({ seconds: pgRestore(url) }))
  })
  row('restore drill (PostgreSQL): `pg_restore`, `verify`, service to /readyz 200', pgDrill.drill,
    `${partsOf(['pg_restore', 'verify', 'ready'], pgDrill.drill)}; **${fmt(pgDrill.drill.seconds / pgDrill.native.seconds, 1)}× pg_restore**`)
  row('`pg_restore` alone of the same dump', pgDrill.native)
} finally {
  for (const database of databases) await database.drop()
  rmSync(dir, { recursive: true, force: true })
}

const m = machine()
const versions = execFileSync('bash', ['-c', 'psql --version; sqlite3 --version | cut -d" " -f1']).toString().trim().split('\n').join(', ')
const report = `# Moving plants between stores

\`npm run bench:move -- --count ${count} --tries ${tries}\` on ${m.cpu} (${m.cores} cores, ${m.memoryGB} GB), ${m.os}, Node ${m.node},
${versions}; ${new Date().toISOString().slice(0, 10)}. ${fmt(count)} plants, ids of 19 digits spread over int64
(the body parser's exact path), half with a tag. Rates are plants per second; RSS is the peak (/usr/bin/time).
The imports of the file and their native tools ran ${tries} times in turn: each row is its fastest try, with its highest peak.
Load average (1 min) ${fmt(loadBefore, 1)} before the run, ${fmt(loadavg()[0], 1)} after: other work on the machine slows every row.

| step | s | plants/s | peak RSS MB | |
|---|---:|---:|---:|---|
${rows.join('\n')}
`
mkdirSync(RESULTS, { recursive: true })
writeFileSync(join(RESULTS, 'move.md'), report)
console.log(report)
