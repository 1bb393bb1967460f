// npm run bench:instructions: what one POST /plants costs in executed instructions, a figure that does
// not depend on the machine's speed or on other load. Each server (bare Fastify, the peer, the
// service) runs under `valgrind --tool=callgrind --instr-atstart=no`, all of its threads counted.
// It is warmed up uninstrumented; then instrumentation is switched on with callgrind_control, a
// settling window runs uncounted, and --windows windows of --requests requests are counted. The
// figure is counted instructions ÷ answered requests, the median of the windows. Then the server is
// left idle for --idle seconds: what its timers execute per second, scaled to a window's length,
// is shown beside the figure as "time-driven" (under callgrind a window lasts about 50× as long as
// at full speed, so that part weighs about 50× as much per request as in production).
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { BENCH, fmt, has, idMix, ID_MIXES, machine as describeMachine, median, positive, ratio, RESULTS, resultLine, run, SERVERS, sleep, startServer, stopServer, TOKEN } from './util.js'

const { values: args } = parseArgs({
  options: {
    targets: { type: 'string', default: Object.keys(SERVERS).join(',') },
    requests: { type: 'string' },
    warmup: { type: 'string' },
    windows: { type: 'string' },
    connections: { type: 'string' },
    idle: { type: 'string' },
    processes: { type: 'string' },
    ids: { type: 'string', default: 'mixed' },
    out: { type: 'string', default: join(RESULTS, 'instructions-latest.md') },
    help: { type: 'boolean', short: 'h', default: false }
  }
})
if (args.help) {
  console.log(`npm run bench:instructions -- [options]
  --targets a,b        any of ${Object.keys(SERVERS).join(', ')} (default: all)
  --requests N         requests per counted window (default 5000)
  --windows N          counted windows; the figure is their median (default 3)
  --warmup N           uncounted requests first (default 10000)
  --connections N      keep-alive connections (default 50)
  --idle S             seconds without requests at the end, for the time-driven part (default 5; 0: none)
  --processes N        fresh server processes per target, the median of theirs (default 1): V8 optimises
                       some processes worse than others, by up to 15 %
  --ids ${ID_MIXES.join('|')}  ids below 2^32, of 19 digits, half of each (default mixed), or of 19 digits
                       1,024 apart, a double each; every body has a tag
  --out FILE           the Markdown result (default bench/results/instructions-latest.md; a .json beside it)`)
  process.exit(0)
}
const count = (name, fallback) => Math.round(positive(args[name], fallback, name))
const options = {
  requests: count('requests', 5000),
  windows: count('windows', 3),
  warmup: count('warmup', 10000),
  connections: count('connections', 50),
  idleSeconds: args.idle === '0' ? 0 : count('idle', 5),
  processes: count('processes', 1),
  ids: idMix(args.ids)
}
const targets = args.targets.split(',').map((t) => t.trim()).filter(Boolean)
for (const t of targets) if (SERVERS[t] === undefined) { console.error(`bench:instructions: unknown target ${t}`); process.exit(2) }
if (!has('valgrind', ['--version']) || !has('callgrind_control', ['--version'])) {
  console.error('bench:instructions needs valgrind (Debian package valgrind)')
  process.exit(2)
}
const runTmp = join(RESULTS, `instructions-tmp-${process.pid}`)
mkdirSync(runTmp, { recursive: true })

/** callgrind_control -e Ir: the instructions so far of every thread, and of the main one. */
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

// Each load counts from its own multiple of 2^24, so that small ids stay below 2^32.
let idBase = 0
/** Exactly `requests` requests (bench/load.js), each connection sending its next when its answer has come. */
async function fixedLoad (port, requests) {
  idBase += 2 ** 24
  const { stdout, stderr } = await run(process.execPath, [join(BENCH, 'load.js'), `http://127.0.0.1:${port}/plants`, '--connections', String(options.connections), '--requests', String(requests)],
    { env: { ...process.env, BENCH_TOKEN: TOKEN, BENCH_IDS: options.ids, BENCH_ID_BASE: String(idBase) }, timeoutMs: 900000 })
  const r = resultLine(stdout)
  if (r === null) throw new Error(`the load failed: ${stderr.trim().split('\n').slice(-2).join(' | ')}`)
  return { requests: r.requests, errors: r.non2xx + r.connectErrors + r.timeouts }
}

/** Instructions per request of one server process: { perRequest, mainPerRequest, windows, timeDriven, errors }. */
async function measure (name) {
  const { script, env } = SERVERS[name]
  // Under valgrind the event loop is slow by design: the overload limit is raised so that nothing is shed with a 503.
  const serverEnv = { ...env(), MAX_EVENT_LOOP_DELAY_MS: process.env.MAX_EVENT_LOOP_DELAY_MS ?? '60000' }
  const argv = ['valgrind', '--tool=callgrind', '--instr-atstart=no', '--vgdb=yes', `--callgrind-out-file=${join(runTmp, 'callgrind.out')}`, process.execPath, script]
  const server = await startServer(argv, serverEnv, { logFile: join(runTmp, `${name}.log`), timeoutMs: 180000 })
  // The server's HOST as startServer sets it: vgdb names its pipes after $USER and $HOST.
  const control = (flags) => run('callgrind_control', [...flags, String(server.child.pid)], { env: { ...serverEnv, HOST: '127.0.0.1' }, timeoutMs: 60000 })
  try {
    let errors = (await fixedLoad(server.port, options.warmup)).errors
    const on = await control(['--instr=on'])
    if (on.status !== 0 || !/OK/.test(on.stdout)) throw new Error(`callgrind_control --instr=on failed: ${(on.stderr || on.stdout).trim().split('\n').at(-1)}`)
    // Right after a pause (the warm-up's end, instrumentation switched on) V8 does work of its own: not counted.
    errors += (await fixedLoad(server.port, Math.min(options.requests, 2000))).errors
    const windows = []
    const mainWindows = []
    const seconds = []
    let before = parseTotals((await control(['-e', 'Ir'])).stdout)
    for (let i = 0; i < options.windows; i++) {
      const began = performance.now()
      const r = await fixedLoad(server.port, options.requests)
      seconds.push((performance.now() - began) / 1000)
      errors += r.errors
      const after = parseTotals((await control(['-e', 'Ir'])).stdout)
      if (before === null || after === null) throw new Error('could not read callgrind counters (callgrind_control -e)')
      windows.push((after.total - before.total) / r.requests)
      mainWindows.push((after.main - before.main) / r.requests)
      before = after
    }
    let timeDriven = null
    if (options.idleSeconds > 0) {
      const began = performance.now()
      await sleep(options.idleSeconds * 1000)
      const after = parseTotals((await control(['-e', 'Ir'])).stdout)
      if (after !== null) timeDriven = (after.total - before.total) / ((performance.now() - began) / 1000) * median(seconds) / options.requests
    }
    return { perRequest: median(windows), mainPerRequest: median(mainWindows), windows, timeDriven, errors }
  } finally {
    await stopServer(server.child, 30000)
  }
}

const startedAt = new Date()
const machine = describeMachine()
const settings = `callgrind, ${options.warmup} warm-up requests, then ${options.windows} × ${options.requests} counted, ${options.connections} connections, ${options.ids} ids with a tag, ${options.processes} process(es) per target`
console.log(`Plant Store instructions per request, ${startedAt.toISOString()}; ${machine.cpu}, ${machine.cores} cores, node ${machine.node}\n${settings}\n`)
const results = {}
try {
  for (const name of targets) {
    try {
      const runs = []
      for (let i = 0; i < options.processes; i++) runs.push(await measure(name))
      const r = {
        perRequest: median(runs.map((x) => x.perRequest)),
        mainPerRequest: median(runs.map((x) => x.mainPerRequest)),
        timeDriven: median(runs.map((x) => x.timeDriven)),
        processes: runs.map((x) => x.perRequest),
        windows: runs.flatMap((x) => x.windows),
        errors: runs.reduce((a, x) => a + x.errors, 0)
      }
      results[name] = r
      console.log(`${name.padEnd(17)} ${fmt(r.perRequest).padStart(9)} instructions/request (main thread ${fmt(r.mainPerRequest)}; windows ${r.windows.map((w) => fmt(w)).join(', ')}; ` +
        `time-driven ${fmt(r.timeDriven)})${r.errors > 0 ? `  !! ${r.errors} non-2xx or errors` : ''}`)
    } catch (error) {
      console.log(`${name.padEnd(17)} SKIPPED: ${error.message}`)
    }
  }
} finally {
  rmSync(runTmp, { recursive: true, force: true })
}

const base = results['baseline-fastify']
const lines = ['| target | instructions/request | main thread | × bare Fastify | of which time-driven | × bare Fastify without it | errors |', '|---|---:|---:|---:|---:|---:|---:|']
for (const [name, r] of Object.entries(results)) {
  const without = (x) => x === undefined || x.timeDriven === null ? null : x.perRequest - x.timeDriven
  lines.push(`| ${name} | ${fmt(r.perRequest)} | ${fmt(r.mainPerRequest)} | ${fmt(ratio(r.perRequest, base?.perRequest), 2)} | ${fmt(r.timeDriven)} | ${fmt(ratio(without(r), without(base)), 2)} | ${r.errors} |`)
}
console.log('\n' + lines.join('\n'))
const md = [`# npm run bench:instructions, ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`, '',
  `Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.os}, Node ${machine.node}. Settings: ${settings}.`, '', ...lines, ''].join('\n')
writeFileSync(args.out, md)
writeFileSync(args.out.replace(/\.md$/, '') + '.json', JSON.stringify({ date: startedAt.toISOString(), machine, options, results }, null, 2) + '\n')
console.log(`\nwritten: ${args.out} (and .json)`)
process.exitCode = Object.values(results).some((r) => r.errors > 0) ? 1 : 0
