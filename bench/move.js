// npm run bench:move: plants out of one store and into another with the service's own commands.
// N plants (19-digit ids spread over int64, half with a tag) are made in a SQLite store with the sqlite3
// shell, then: `plant-store export` to a file; `plant-store export | plant-store import` into an empty
// PostgreSQL database (end to end, each side timed and its peak RSS read by /usr/bin/time); beside it,
// `plant-store import` of the exported file into another, beside `psql \copy` of the same rows (CSV) into the
// same table of a third (file against file: the ratio); `plant-store import` of the file into an empty SQLite
// store, beside the sqlite3 shell's `.import` of the same rows; these pairs `--tries` times in turn (default 2),
// each side's fastest try kept.
// Result: bench/results/move.md (machine, date, command).
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { freshDatabase, postgresProblem } from './postgres.js'
import { fmt, machine, RESULTS } from './util.js'

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
      const { seconds, rssMB } = await step()
      const kept = results[name] ?? { seconds, rssMB }
      results[name] = { seconds: Math.min(kept.seconds, seconds), rssMB: Math.max(kept.rssMB, rssMB) }
    }
  }
  return results
}

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
