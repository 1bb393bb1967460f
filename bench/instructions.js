// Instructions per request: what one POST /plants costs in executed instructions, a measure that
// does not depend on the machine's speed or on other load (bench/README.md, "Instructions per
// request"). Each target is started under `valgrind --tool=callgrind --instr-atstart=no` (only the
// server process is counted, all of its threads) and warmed up with --warmup requests while
// uninstrumented. Then instrumentation is switched on with callgrind_control, an uncounted settling
// window runs (up to 2000 requests), and --windows windows of --requests requests each are counted
// (bench/fixed-load.js sends exactly that many, over --connections keep-alive connections). The
// figure is the counted instructions ÷ answered requests, the median of the windows (V8's
// background threads, GC and compilation, make single windows vary).
//
//   npm run bench:instructions                      baseline-fastify, ladder-1…7, memory
//   npm run bench:instructions -- --targets baseline-fastify,memory --requests 10000
//   npm run bench -- --instructions …               the same column beside the req/s table
//
// Also used by bench/run.js (--instructions). perf stat is not used: it needs hardware counters,
// which VMs often lack ("<not supported> instructions"); callgrind counts the same instructions anywhere.
import { spawn } from 'node:child_process'
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { targetByName } from './targets.js'
import { BENCH, call, fmt, freePort, has, median, RESULTS, ratio, resultLine, ROOT, run, sleep, TOKEN } from './util.js'

export const DEFAULT_INSTRUCTION_TARGETS = ['baseline-fastify', 'ladder-1', 'ladder-2', 'ladder-3', 'ladder-4', 'ladder-5', 'ladder-6', 'ladder-7', 'memory']
export const INSTRUCTION_DEFAULTS = { requests: 5000, warmup: 10000, windows: 3, connections: 50, idleSeconds: 5 }

export const callgrindAvailable = () => has('valgrind', ['--version']) && has('callgrind_control', ['--version'])

/** Thread totals of `callgrind_control -e Ir PID`: { total, main } (instructions so far), or null. */
function parseTotals (stdout) {
  const at = stdout.indexOf('Totals:')
  if (at < 0) return null
  let total = 0
  let main = null
  for (const line of stdout.slice(at).split('\n').slice(1)) {
    const threaded = /^\s*Th\s+(\d+)\s+([\d,]+)\s*$/.exec(line)
    const single = /^\s*([\d,]+)\s*$/.exec(line)
    const value = threaded ? Number(threaded[2].replaceAll(',', '')) : single ? Number(single[1].replaceAll(',', '')) : null
    if (value === null) continue
    total += value
    if (!threaded || threaded[1] === '1') main ??= value
  }
  return { total, main }
}

/**
 * Instructions per request of one HTTP target of bench/targets.js. ctx: { runTmp, requests, warmup,
 * windows, connections, profileDir? (keeps the callgrind output of the counted windows there) }.
 * Resolves { perRequest, mainPerRequest, windows: [per request…], requests, non2xx } or { skipped }.
 */
export async function measureInstructions (name, ctx) {
  const target = targetByName.get(name)
  if (target?.kind !== 'http') return { skipped: 'not an HTTP target' }
  if (!callgrindAvailable()) return { skipped: 'valgrind (callgrind) is not installed (Debian package valgrind)' }
  const prepared = await target.prepare(1, ctx)
  if (prepared.skipped) return { skipped: prepared.skipped }
  const port = await freePort()
  // callgrind_control finds the process through vgdb's pipes, named after $USER and $HOST: the same env on both sides.
  // Under valgrind the event loop is slow by design: the overload limit is raised so that no request is
  // shed with a 503 (under-pressure still samples, as in production; see feature-ladder.js for ladder-6).
  // On a loaded machine a sample interval can pass with no delay sample at all, which under-pressure
  // reads as an infinite delay: MAX_EVENT_LOOP_DELAY_MS=0 in the caller's environment turns the check off.
  const env = { ...prepared.env, HOST: '127.0.0.1', PORT: String(port), MAX_EVENT_LOOP_DELAY_MS: process.env.MAX_EVENT_LOOP_DELAY_MS ?? '60000' }
  const outFile = join(ctx.profileDir ?? ctx.runTmp, `callgrind.${name}.out`)
  const logFile = join(ctx.runTmp, `instructions-${name}.stdout`)
  // The service's access log goes to a real file, as in production.
  const stdout = openSync(logFile, 'w')
  // With a profile kept: --perf-basic-prof writes /tmp/perf-<pid>.map, the JIT code's addresses and
  // JS function names, which bench/callgrind-names.js puts into callgrind's output.
  const child = spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', '--vgdb=yes', `--callgrind-out-file=${outFile}`,
    process.execPath, ...(ctx.profileDir === undefined ? [] : ['--perf-basic-prof', `--logfile=${join(ctx.runTmp, 'v8.log')}`]), target.script], { env, cwd: ROOT, stdio: ['ignore', stdout, 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr = (stderr + chunk).slice(-4000) })
  let exited = false
  child.once('exit', () => { exited = true })
  const control = (argv) => run('callgrind_control', [...argv, String(child.pid)], { env, timeoutMs: 60000 })
  const loadEnv = (base) => ({ ...process.env, BENCH_TOKEN: TOKEN, BENCH_ID_BASE: String(base) })
  let idBase = 2 ** 32
  const fixedLoad = async (requests) => {
    idBase += 2 ** 28
    const { stdout: out, stderr: err } = await run(process.execPath, [join(BENCH, 'fixed-load.js'), String(port), String(requests), String(ctx.connections)],
      { env: loadEnv(idBase), timeoutMs: 600000 })
    const r = resultLine(out)
    if (r === null) throw new Error(`fixed-load failed: ${err.trim().split('\n').slice(-2).join(' | ')}`)
    return r
  }
  try {
    const deadline = Date.now() + 180000
    const probe = JSON.stringify({ id: 1, name: 'start probe' })
    for (;;) {
      if (exited) return { skipped: `exited at start under valgrind: ${stderr.trim().split('\n').slice(-1)[0] ?? ''}` }
      if (Date.now() > deadline) return { skipped: 'no 2xx within 180 s under valgrind' }
      const res = await call(port, 'POST', '/plants', probe, 5000).catch(() => null)
      if (res !== null && res.status >= 200 && res.status < 300) break
      await sleep(200)
    }
    const warm = await fixedLoad(ctx.warmup)
    const on = await control(['--instr=on'])
    if (on.status !== 0 || !/OK/.test(on.stdout)) return { skipped: `callgrind_control --instr=on failed: ${(on.stderr || on.stdout).trim().split('\n').slice(-1)[0]}` }
    // A first instrumented window, not counted: right after a pause (the warm-up's end, switching
    // instrumentation on) V8 does work of its own (GC, compilation) that is not a request's cost.
    const settle = await fixedLoad(Math.min(ctx.requests, 2000))
    await control(['--zero'])
    const windows = []
    const mainWindows = []
    let non2xx = warm.non2xx + warm.errors + settle.non2xx + settle.errors
    const seconds = []
    let before = parseTotals((await control(['-e', 'Ir'])).stdout)
    for (let i = 0; i < ctx.windows; i++) {
      const startedAt = performance.now()
      const r = await fixedLoad(ctx.requests)
      seconds.push((performance.now() - startedAt) / 1000)
      non2xx += r.non2xx + r.errors
      const after = parseTotals((await control(['-e', 'Ir'])).stdout)
      if (before === null || after === null) return { skipped: 'could not read callgrind counters (callgrind_control -e)' }
      windows.push((after.total - before.total) / r.requests)
      mainWindows.push((after.main - before.main) / r.requests)
      before = after
    }
    // What the process executes with no request at all (timers: under-pressure's and prom-client's
    // samplers, Node's connection checks), per second. Under callgrind a window lasts about 50× as
    // long as it would at full speed, so this time-driven part weighs about 50× as much per request
    // as it does in production: reported beside the figure, never subtracted from it.
    let idlePerSecond
    if (ctx.idleSeconds > 0) {
      const startedAt = performance.now()
      await sleep(ctx.idleSeconds * 1000)
      const after = parseTotals((await control(['-e', 'Ir'])).stdout)
      if (after !== null) idlePerSecond = (after.total - before.total) / ((performance.now() - startedAt) / 1000)
    }
    const windowSeconds = median(seconds)
    if (ctx.profileDir !== undefined) {
      await control(['--dump=counted windows'])
      const { nameJitFrames } = await import('./callgrind-names.js')
      nameJitFrames(`${outFile}.1`, `/tmp/perf-${child.pid}.map`)
    }
    const timeDriven = idlePerSecond === undefined ? undefined : idlePerSecond * windowSeconds / ctx.requests
    return { perRequest: median(windows), mainPerRequest: median(mainWindows), windows, mainWindows, requests: ctx.requests * ctx.windows, non2xx, idlePerSecond, windowSeconds, timeDriven }
  } finally {
    if (!exited) {
      const gone = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 30000)
      await gone
      clearTimeout(timer)
    }
    closeSync(stdout)
    await prepared.cleanup?.().catch(() => {})
    if (ctx.profileDir === undefined) rmSync(outFile, { force: true })
  }
}

// ---------------------------------------------------------------------------------------------
// Standalone: npm run bench:instructions

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values: args } = parseArgs({
    options: {
      targets: { type: 'string' },
      requests: { type: 'string' },
      warmup: { type: 'string' },
      windows: { type: 'string' },
      connections: { type: 'string' },
      idle: { type: 'string' },
      processes: { type: 'string' },
      profile: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false }
    }
  })
  if (args.help) {
    console.log(`npm run bench:instructions -- [options]
  --targets a,b        HTTP targets of bench/targets.js (default ${DEFAULT_INSTRUCTION_TARGETS.join(',')})
  --requests N         requests per counted window (default ${INSTRUCTION_DEFAULTS.requests})
  --windows N          counted windows; the figure is their median (default ${INSTRUCTION_DEFAULTS.windows})
  --warmup N           uncounted requests first (default ${INSTRUCTION_DEFAULTS.warmup})
  --connections N      keep-alive connections (default ${INSTRUCTION_DEFAULTS.connections})
  --idle S             then S seconds without requests: what timers execute per second, shown as
                       "time-driven" per request at the windows' pace (default ${INSTRUCTION_DEFAULTS.idleSeconds}; 0: not measured)
  --processes N        fresh server processes per target, the figure is their median (default 1): V8
                       optimises some processes worse than others (bench/README.md), ±15% seen
  --profile            keep callgrind's output of the counted windows in bench/results/profiles/
                       (callgrind_annotate bench/results/profiles/callgrind.<target>.out)`)
    process.exit(0)
  }
  const count = (value, fallback, name) => {
    if (value === undefined) return fallback
    const n = Number(value)
    if (!Number.isInteger(n) || n <= 0) { console.error(`bench:instructions: --${name} must be a positive integer, got ${value}`); process.exit(2) }
    return n
  }
  const targets = args.targets === undefined ? DEFAULT_INSTRUCTION_TARGETS : args.targets.split(',').map((t) => t.trim()).filter(Boolean)
  for (const t of targets) {
    if (targetByName.get(t)?.kind !== 'http') { console.error(`bench:instructions: "${t}" is not an HTTP target of bench/targets.js`); process.exit(2) }
  }
  const runTmp = join(RESULTS, `tmp-${process.pid}`)
  mkdirSync(runTmp, { recursive: true })
  const profileDir = args.profile ? join(RESULTS, 'profiles') : undefined
  if (profileDir) mkdirSync(profileDir, { recursive: true })
  const ctx = {
    runTmp,
    profileDir,
    requests: count(args.requests, INSTRUCTION_DEFAULTS.requests, 'requests'),
    warmup: count(args.warmup, INSTRUCTION_DEFAULTS.warmup, 'warmup'),
    windows: count(args.windows, INSTRUCTION_DEFAULTS.windows, 'windows'),
    connections: count(args.connections, INSTRUCTION_DEFAULTS.connections, 'connections'),
    idleSeconds: args.idle === '0' ? 0 : count(args.idle, INSTRUCTION_DEFAULTS.idleSeconds, 'idle')
  }
  const processes = count(args.processes, 1, 'processes')
  const startedAt = new Date()
  const machine = `${os.cpus()[0]?.model ?? 'unknown'}, ${os.cpus().length} cores, Node ${process.version}`
  console.log(`Plant Store instructions per request, ${startedAt.toISOString()}; ${machine}`)
  console.log(`callgrind: ${ctx.warmup} warm-up requests, then ${ctx.windows} × ${ctx.requests} counted, ${ctx.connections} connections\n`)
  const results = {}
  try {
    for (const name of targets) {
      const runs = []
      for (let i = 0; i < processes; i++) {
        try { runs.push(await measureInstructions(name, ctx)) } catch (error) { runs.push({ skipped: `failed: ${error.message}` }) }
        if (runs.at(-1).skipped !== undefined) break
      }
      const r = runs.at(-1).skipped !== undefined
        ? runs.at(-1)
        : {
            perRequest: median(runs.map((x) => x.perRequest)),
            mainPerRequest: median(runs.map((x) => x.mainPerRequest)),
            windows: runs.flatMap((x) => x.windows),
            mainWindows: runs.flatMap((x) => x.mainWindows),
            processes: runs.map((x) => x.perRequest),
            timeDriven: runs.some((x) => x.timeDriven === undefined) ? undefined : median(runs.map((x) => x.timeDriven)),
            windowSeconds: median(runs.map((x) => x.windowSeconds)),
            requests: runs.reduce((a, x) => a + x.requests, 0),
            non2xx: runs.reduce((a, x) => a + x.non2xx, 0)
          }
      results[name] = r
      console.log(r.skipped !== undefined
        ? `${name.padEnd(16)} SKIPPED: ${r.skipped}`
        : `${name.padEnd(16)} ${fmt(r.perRequest).padStart(9)} instructions/request (main thread ${fmt(r.mainPerRequest)}${r.processes ? `; processes ${r.processes.map((p) => fmt(p)).join(', ')}` : ''}; windows ${r.windows.map((w, i) => `${fmt(w)}/${fmt(r.mainWindows[i])}`).join(', ')})` +
          (r.timeDriven === undefined ? '' : `; time-driven ${fmt(r.timeDriven)} (idle rate × ${fmt(r.windowSeconds, 1)} s a window)`) +
          (r.non2xx > 0 ? `  !! ${r.non2xx} non-2xx or errors` : ''))
    }
  } finally {
    rmSync(runTmp, { recursive: true, force: true })
  }
  const base = results['baseline-fastify']?.perRequest
  const baseTimed = results['baseline-fastify'] === undefined || results['baseline-fastify'].timeDriven === undefined ? undefined : base - results['baseline-fastify'].timeDriven
  const lines = ['| target | instructions/request | main thread | × baseline-fastify | of which time-driven | without it | × baseline-fastify without |', '|---|---:|---:|---:|---:|---:|---:|']
  for (const [name, r] of Object.entries(results)) {
    if (r.skipped !== undefined) continue
    const less = r.timeDriven === undefined ? undefined : r.perRequest - r.timeDriven
    lines.push(`| ${name} | ${fmt(r.perRequest)} | ${fmt(r.mainPerRequest)} | ${fmt(ratio(r.perRequest, base), 2)} | ${r.timeDriven === undefined ? '–' : fmt(r.timeDriven)} | ${less === undefined ? '–' : fmt(less)} | ${less === undefined ? '–' : fmt(ratio(less, baseTimed), 2)} |`)
  }
  console.log('\n' + lines.join('\n'))
  const md = [`# Instructions per request, ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`, '', `Machine: ${machine}. callgrind, ${ctx.warmup} warm-up requests, ${ctx.windows} × ${ctx.requests} counted, ${ctx.connections} connections.`, '', ...lines, ''].join('\n')
  mkdirSync(RESULTS, { recursive: true })
  writeFileSync(join(RESULTS, 'instructions-latest.md'), md)
  writeFileSync(join(RESULTS, 'instructions-latest.json'), JSON.stringify({ date: startedAt.toISOString(), machine, settings: ctx, results }, null, 2) + '\n')
  console.log('\nwritten: bench/results/instructions-latest.{md,json}')
  process.exitCode = Object.values(results).some((r) => r.non2xx > 0) ? 1 : 0
}
