// Start time as users see it: from spawning a command to its first answer, polled every
// millisecond, median of --starts starts, the commands alternated (A B C, A B C, …) so that a
// loaded machine weighs on all of them alike. Part of `npm run bench`; alone:
//   node bench/start-time.js [--starts N] [--no-image]   (dist/ must be current: `npm run build`)
//
//   node dist/server.js          the service (memory store) to its first 200 on GET /livez
//   npm start                    the same through the README's command (npm's own start-up counted)
//   node bench/baseline-fastify.js   bare Fastify to its first answer (any status): the baseline
// and, when a Docker engine answers, the image (built here as plant-store-bench:start from the
// working tree) against bare Fastify in the same image (bench/baseline-fastify.js mounted into it,
// run by the image's node with the image's node_modules): `docker run` to the first answer, the
// engine's own start-up counted on both sides. Also `docker stop` of an idle container (SIGTERM to
// exit), checked against the image's SHUTDOWN_DELAY_MS plus the drain of an idle service.
// Targets (issue 24): the service ≤ 1.5× the baseline (moonshot 1.2×), npm start ≤ 2.0×; the image
// ≤ 1.5× its baseline; docker stop ≤ SHUTDOWN_DELAY_MS + 3 s. The image without its compile cache
// (NODE_DISABLE_COMPILE_CACHE=1) is shown for what the cache buys.
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { BENCH, call, cpuSeconds, fmt, freePort, has, median, ROOT, sleep, TOKEN } from './util.js'

const { values: args } = parseArgs({ options: { starts: { type: 'string', default: '7' }, 'no-image': { type: 'boolean', default: false } } })
const starts = Number(args.starts)

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const IMAGE = 'plant-store-bench:start'
const BASELINE = 'node bench/baseline-fastify.js'
const IMAGE_BASELINE = 'image: bare Fastify'
const name = (what) => `plant-store-bench-${what}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`

/** Each command: argv given a free host port; ok(status) says whether an answer counts. */
const COMMANDS = {
  'node dist/server.js': { argv: () => [process.execPath, 'dist/server.js'], ok: (status) => status === 200, cpu: true },
  'npm start': { argv: () => [npm, 'start', '--silent'], ok: (status) => status === 200 },
  [BASELINE]: { argv: () => [process.execPath, `${BENCH}/baseline-fastify.js`], ok: () => true, cpu: true }
}

const dockerProblem = args['no-image'] ? '--no-image' : !has('docker', ['version']) || spawnSync('docker', ['info'], { stdio: 'ignore' }).status !== 0 ? 'no Docker engine answers' : undefined
if (dockerProblem === undefined) {
  console.log(`building ${IMAGE} from ${ROOT} (docker build --network host)`)
  const build = spawnSync('docker', ['build', '--network', 'host', '-q', '-t', IMAGE, ROOT], { stdio: ['ignore', 'ignore', 'inherit'] })
  if (build.status !== 0) throw new Error('docker build failed')
  const run = (extra) => (port) => ['docker', 'run', '--rm', '--name', name('start'), '--publish', `127.0.0.1:${port}:3000`, '--env', `API_TOKENS=${TOKEN}`, ...extra]
  COMMANDS['image: plant-store'] = { argv: run([IMAGE]), ok: (status) => status === 200, docker: true }
  // What the warmed compile cache buys (it costs about 5 MB resident: Node keeps its entries in memory).
  COMMANDS['image: no compile cache'] = { argv: run(['--env', 'NODE_DISABLE_COMPILE_CACHE=1', IMAGE]), ok: (status) => status === 200, docker: true }
  COMMANDS[IMAGE_BASELINE] = {
    argv: run(['--volume', `${BENCH}/baseline-fastify.js:/app/bench/baseline-fastify.js:ro`, IMAGE, 'node', 'bench/baseline-fastify.js']),
    ok: () => true,
    docker: true
  }
} else {
  console.log(`the image is not measured: ${dockerProblem}`)
}

/** Milliseconds to the first answer; for a command that is node itself, also its CPU time by then (cpuMs). */
async function once ({ argv, ok, docker, cpu }) {
  const port = await freePort()
  const own = new Set(['PORT', 'HOST', 'LOG_LEVEL', 'API_TOKENS', 'API_TOKENS_FILE', 'DATABASE_URL', 'NODE_OPTIONS', 'NODE_COMPILE_CACHE'])
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !own.has(key))), PORT: String(port), HOST: '127.0.0.1', API_TOKENS: TOKEN }
  const command = argv(port)
  const started = process.hrtime.bigint()
  const child = spawn(command[0], command.slice(1), { cwd: ROOT, env, stdio: 'ignore', detached: true })
  let exited = false
  child.once('exit', () => { exited = true })
  try {
    while (!exited) {
      const res = await call(port, 'GET', '/livez', undefined, 1000).catch(() => null)
      if (res !== null && ok(res.status)) {
        const ms = Number(process.hrtime.bigint() - started) / 1e6
        return { ms, cpuMs: cpu ? (cpuSeconds(child.pid) ?? Number.NaN) * 1000 : undefined }
      }
      await sleep(1)
    }
    throw new Error(`${command.join(' ')} exited before answering`)
  } finally {
    if (!exited) {
      const gone = new Promise((resolve) => child.once('exit', resolve))
      // The whole process group: npm and the node it started; `docker run` forwards SIGTERM to the container.
      process.kill(-child.pid, docker ? 'SIGKILL' : 'SIGTERM')
      if (docker) spawnSync('docker', ['rm', '--force', command[command.indexOf('--name') + 1]], { stdio: 'ignore' })
      await gone
    }
  }
}

/** docker stop of an idle container of the image: SIGTERM to exit, in ms. */
async function dockerStop () {
  const id = spawnSync('docker', ['run', '--detach', '--name', name('stop'), '--env', `API_TOKENS=${TOKEN}`, IMAGE], { encoding: 'utf8' }).stdout.trim()
  try {
    for (;;) {
      const health = spawnSync('docker', ['exec', id, 'node', '-e', "fetch('http://127.0.0.1:3000/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"])
      if (health.status === 0) break
      await sleep(50)
    }
    const started = process.hrtime.bigint()
    spawnSync('docker', ['stop', '--time', '10', id], { stdio: 'ignore' })
    const ms = Number(process.hrtime.bigint() - started) / 1e6
    const exitCode = Number(spawnSync('docker', ['inspect', '--format', '{{.State.ExitCode}}', id], { encoding: 'utf8' }).stdout.trim())
    return { ms, exitCode }
  } finally {
    spawnSync('docker', ['rm', '--force', id], { stdio: 'ignore' })
  }
}

const times = Object.fromEntries(Object.keys(COMMANDS).map((key) => [key, []]))
const cpuTimes = Object.fromEntries(Object.keys(COMMANDS).map((key) => [key, []]))
const stops = []
for (let i = 0; i < starts; i++) {
  for (const [key, command] of Object.entries(COMMANDS)) {
    const { ms, cpuMs } = await once(command)
    times[key].push(ms)
    if (cpuMs !== undefined) cpuTimes[key].push(cpuMs)
  }
  if (dockerProblem === undefined) stops.push(await dockerStop())
}
if (dockerProblem === undefined) spawnSync('docker', ['image', 'rm', IMAGE], { stdio: 'ignore' })

const machine = `${process.version}, ${readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.*)$/m)?.[1] ?? process.arch}`
console.log(`start to first answer, median of ${starts} starts (${machine})`)
for (const [key, ms] of Object.entries(times)) {
  const cpu = cpuTimes[key]
  console.log(`  ${key.padEnd(32)} median ${fmt(median(ms))} ms  (${ms.map((m) => fmt(m)).join(', ')})` +
    (cpu.length === 0 ? '' : `; CPU by then median ${fmt(median(cpu))} ms`))
}

// As in bench/run.js: a missed target is reported (FAIL), a broken run (a docker stop that did not end
// in exit 0) is the exit status.
let broken = false
const check = (what, value, target, moonshot) => {
  const verdict = value === null ? 'SKIP' : value <= target ? 'PASS' : 'FAIL'
  console.log(`  ${verdict}  ${what}: ${value === null ? '–' : `${fmt(value, 2)}×`} (target ≤ ${target}×${moonshot === undefined ? '' : `, moonshot ≤ ${moonshot}×`})`)
}
const ratioOf = (a, b) => times[a] === undefined || times[b] === undefined ? null : median(times[a]) / median(times[b])
// CPU time to the first answer (user + system, /proc, 10 ms ticks) moves much less than the wall
// time when other processes share the machine: shown beside the checks, which use the wall time.
const cpuRatio = median(cpuTimes['node dist/server.js']) / median(cpuTimes[BASELINE])
console.log(`  CPU to first answer, node dist/server.js ÷ bare Fastify: ${fmt(cpuRatio, 2)}× (information)`)
console.log('checks')
check('node dist/server.js ÷ bare Fastify', ratioOf('node dist/server.js', BASELINE), 1.5, 1.2)
check('npm start ÷ bare Fastify', ratioOf('npm start', BASELINE), 2.0)
check('image ÷ bare Fastify in the image', ratioOf('image: plant-store', IMAGE_BASELINE), 1.5, 1.2)
if (stops.length > 0) {
  const delayMs = Number(/SHUTDOWN_DELAY_MS=(\d+)/.exec(readFileSync(`${ROOT}/Dockerfile`, 'utf8'))?.[1] ?? 0)
  const stopMs = median(stops.map((stop) => stop.ms))
  const clean = stops.every((stop) => stop.exitCode === 0)
  const verdict = clean && stopMs <= delayMs + 3000 ? 'PASS' : 'FAIL'
  broken = !clean
  console.log(`  ${verdict}  docker stop of an idle container: median ${fmt(stopMs)} ms (${stops.map((stop) => fmt(stop.ms)).join(', ')}), ` +
    `exit ${clean ? '0 every time' : stops.map((stop) => stop.exitCode).join(',')} (target ≤ SHUTDOWN_DELAY_MS ${delayMs} + 3000 ms, exit 0)`)
}
if (broken) process.exitCode = 1
