// Start time as users see it: from spawning a command to its first answer, polled every
// millisecond, median of --starts starts, alternating the commands (A B, A B, …).
//   npm start (the service, from the README's command) to its first 200 on GET /livez, against
//   node bench/baseline-fastify.js to its first answer (any status) on the same request.
// npm's own start-up is counted: it is part of what a user waits for.
//   node bench/start-time.js [--starts N]     (dist/ must be current: run `npm run build` first)
import { spawn } from 'node:child_process'
import { parseArgs } from 'node:util'
import { BENCH, call, fmt, freePort, median, ROOT, sleep, TOKEN } from './util.js'

const { values: args } = parseArgs({ options: { starts: { type: 'string', default: '7' } } })
const starts = Number(args.starts)

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const COMMANDS = {
  'npm start': { argv: [npm, 'start', '--silent'], ok: (status) => status === 200 },
  // The same without npm: what the service itself adds.
  'node scripts/start.mjs': { argv: [process.execPath, 'scripts/start.mjs'], ok: (status) => status === 200 },
  'node bench/baseline-fastify.js': { argv: [process.execPath, `${BENCH}/baseline-fastify.js`], ok: () => true }
}

async function once ({ argv, ok }) {
  const port = await freePort()
  const own = new Set(['PORT', 'HOST', 'LOG_LEVEL', 'API_TOKENS', 'API_TOKENS_FILE', 'DATABASE_URL', 'NODE_OPTIONS'])
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !own.has(name))), PORT: String(port), HOST: '127.0.0.1', API_TOKENS: TOKEN }
  const started = process.hrtime.bigint()
  const child = spawn(argv[0], argv.slice(1), { cwd: ROOT, env, stdio: 'ignore', detached: true })
  let exited = false
  child.once('exit', () => { exited = true })
  try {
    while (!exited) {
      const res = await call(port, 'GET', '/livez', undefined, 1000).catch(() => null)
      if (res !== null && ok(res.status)) return Number(process.hrtime.bigint() - started) / 1e6
      await sleep(1)
    }
    throw new Error(`${argv.join(' ')} exited before answering`)
  } finally {
    // The whole process group: npm and the node it started.
    if (!exited) {
      const gone = new Promise((resolve) => child.once('exit', resolve))
      process.kill(-child.pid, 'SIGTERM')
      await gone
    }
  }
}

const times = Object.fromEntries(Object.keys(COMMANDS).map((name) => [name, []]))
for (let i = 0; i < starts; i++) {
  for (const [name, command] of Object.entries(COMMANDS)) times[name].push(await once(command))
}
for (const [name, ms] of Object.entries(times)) console.log(`${name.padEnd(32)} median ${fmt(median(ms))} ms  (${ms.map((m) => fmt(m)).join(', ')})`)
const base = median(times['node bench/baseline-fastify.js'])
console.log(`npm start ÷ baseline-fastify: ${fmt(median(times['npm start']) / base, 2)}× (target ≤ 1.5×); ` +
  `node scripts/start.mjs ÷ baseline-fastify: ${fmt(median(times['node scripts/start.mjs']) / base, 2)}×`)
