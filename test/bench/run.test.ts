import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const RUN = fileURLToPath(new URL('../../bench/run.js', import.meta.url))
const LOGS = fileURLToPath(new URL('../../bench/results/logs/', import.meta.url))

interface Row { rps: number, p99: number, startMs: number, errors: number }
interface Round { requests: number, logLines: number, droppedLines: number }
interface GcRound { scavengesPerK: number, pauseMs: number }
interface CellRound { requests: number, logLines: number, droppedLines: number, waitUs: number | null, gc: GcRound }

/** A tiny `npm run bench` (autocannon, so that it needs no wrk): one table, the checks, each server's log in a file. */
describe('bench/run.js', () => {
  it('measures the service, the peer and bare Fastify side by side and prints a PASS or FAIL line per target', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-test-'))
    try {
      const out = join(dir, 'bench.md')
      const result = spawnSync(process.execPath, [
        RUN, '--targets', 'baseline-fastify,peer,memory', '--tool', 'autocannon', '--rounds', '1', '--duration', '1',
        '--warmup', '0', '--starts', '1', '--ids', 'snowflake', '--out', out
      ], { encoding: 'utf8', timeout: 50000 })
      expect(result.status, result.stderr + result.stdout).toBe(0)
      for (const line of [
        /^(PASS|FAIL) {2}service req\/s vs peer: [\d.]+× \(target ≥ 1\.0×\)$/m,
        /^(PASS|FAIL) {2}service req\/s vs peer, moonshot: [\d.]+× \(target ≥ 1\.25×\)$/m,
        /^(PASS|FAIL) {2}service p99 vs peer p99: [\d.]+× /m,
        /^(PASS|FAIL) {2}service start to first 2xx of POST \/plants vs bare Fastify: [\d.]+× \([\d,]+ vs [\d,]+ ms\) \(target ≤ 1\.3×\)$/m,
        /^SKIP {2}PostgreSQL store req\/s vs pgbench/m
      ]) expect(result.stdout).toMatch(line)
      const { summary, rounds, options } = JSON.parse(readFileSync(out.replace(/\.md$/, '.json'), 'utf8')) as
        { summary: Record<string, Row>, rounds: Record<string, Round[]>, options: { ids: string } }
      expect(options.ids).toBe('snowflake')
      expect(Object.keys(summary)).toEqual(['baseline-fastify', 'peer', 'memory'])
      for (const [name, row] of Object.entries(summary)) {
        expect(row.rps, name).toBeGreaterThan(0)
        expect(row.p99, name).toBeGreaterThan(0)
        expect(row.startMs, name).toBeGreaterThan(0)
        expect(row.errors, name).toBe(0)
      }
      // Logged at info to a file: the peer writes two lines a request, the service one.
      for (const name of ['peer', 'memory']) {
        const [round] = rounds[name] as [Round]
        expect(round.logLines).toBeGreaterThanOrEqual(round.requests)
        expect(round.droppedLines).toBe(0)
        expect(readFileSync(join(LOGS, `${name}.log`), 'utf8').split('\n').length).toBeGreaterThan(round.requests)
      }
      expect(readFileSync(out, 'utf8')).toContain('| service req/s vs peer | ≥ 1.0× |')
      expect(readFileSync(out, 'utf8')).toContain(', snowflake ids.')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60000)

  it('runs memory-no-metrics only when named: the service without METRICS_PORT beside the one with it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-test-'))
    try {
      const out = join(dir, 'bench.md')
      const result = spawnSync(process.execPath, [
        RUN, '--targets', 'memory,memory-no-metrics', '--tool', 'autocannon', '--rounds', '1', '--duration', '1',
        '--warmup', '0', '--starts', '1', '--out', out
      ], { encoding: 'utf8', timeout: 50000 })
      expect(result.status, result.stderr + result.stdout).toBe(0)
      const { summary } = JSON.parse(readFileSync(out.replace(/\.md$/, '.json'), 'utf8')) as { summary: Record<string, Row> }
      expect(Object.keys(summary)).toEqual(['memory', 'memory-no-metrics'])
      expect(summary['memory-no-metrics']?.rps).toBeGreaterThan(0)
      expect(readFileSync(join(LOGS, 'memory.log'), 'utf8')).toContain('Metrics listening at')
      const log = readFileSync(join(LOGS, 'memory-no-metrics.log'), 'utf8')
      expect(log).toContain('"route":"/plants"')
      expect(log).not.toContain('Metrics listening at')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60000)

  it('runs a matrix of id mixes with NODE_OPTIONS and --trace-gc: a table and checks per cell, every round listed, GC pauses per 1,000 requests', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-test-'))
    try {
      const out = join(dir, 'bench.md')
      const result = spawnSync(process.execPath, [
        RUN, '--targets', 'peer,memory', '--tool', 'autocannon', '--rounds', '1', '--duration', '1', '--warmup', '0', '--starts', '1',
        '--ids', 'small,snowflake', '--no-pin', '--trace-gc', '--node-options=--max-semi-space-size=1', '--out', out
      ], { encoding: 'utf8', timeout: 80000 })
      expect(result.status, result.stderr + result.stdout).toBe(0)
      for (const cell of ['small ids, unpinned', 'snowflake ids, unpinned']) {
        expect(result.stdout).toMatch(new RegExp(`^(PASS|FAIL) {2}service req/s vs peer, ${cell}: [\\d.]+× \\(target ≥ 1\\.0×\\)$`, 'm'))
        expect(result.stdout).toMatch(new RegExp(`^(PASS|FAIL) {2}service p99 vs peer p99, ${cell}: [\\d.]+× `, 'm'))
      }
      // Only the checks of the servers run: no start or PostgreSQL line in a matrix without them.
      expect(result.stdout).not.toMatch(/^SKIP/m)
      const { cells, options } = JSON.parse(readFileSync(out.replace(/\.md$/, '.json'), 'utf8')) as
        { cells: Array<{ ids: string, rounds: Record<string, CellRound[]> }>, options: { nodeOptions: string } }
      expect(options.nodeOptions).toBe('--max-semi-space-size=1')
      expect(cells.map((c) => c.ids)).toEqual(['small', 'snowflake'])
      for (const cell of cells) {
        for (const name of ['peer', 'memory']) {
          const [round] = cell.rounds[name] as [CellRound]
          // The log's JSON lines are counted apart from V8's GC lines in the same stdout.
          expect(round.logLines).toBeGreaterThanOrEqual(round.requests)
          expect(round.droppedLines).toBe(0)
          expect(round.waitUs).toBeGreaterThanOrEqual(0)
          // 1 MiB semi-spaces (NODE_OPTIONS reached the server) fill every few dozen requests: the default's take hundreds.
          expect(round.gc.scavengesPerK).toBeGreaterThan(8)
          expect(round.gc.pauseMs).toBeGreaterThan(0)
        }
      }
      const md = readFileSync(out, 'utf8')
      expect(md).toContain('## snowflake ids, unpinned')
      expect(md).toContain('| round | target | req/s | p99 ms | CPU µs/req | waited µs/req | GC ms/kreq | longest GC ms | × peer, memory or pgbench |')
      expect(md).toContain('NODE_OPTIONS `--max-semi-space-size=1`, node --trace-gc')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 90000)

  it('runs the service on a fresh SQLite file each round, judged against the memory store, and removes the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-test-'))
    try {
      const out = join(dir, 'bench.md')
      const result = spawnSync(process.execPath, [
        RUN, '--targets', 'memory,sqlite', '--tool', 'autocannon', '--rounds', '1', '--duration', '1', '--warmup', '0',
        '--starts', '1', '--out', out
      ], { encoding: 'utf8', timeout: 50000 })
      expect(result.status, result.stderr + result.stdout).toBe(0)
      expect(result.stdout).toMatch(/^(PASS|FAIL) {2}SQLite store req\/s vs memory store: [\d.]+× \(target ≥ 0\.50×\)$/m)
      const { summary } = JSON.parse(readFileSync(out.replace(/\.md$/, '.json'), 'utf8')) as { summary: Record<string, Row> }
      expect(summary.sqlite?.errors).toBe(0)
      expect(summary.sqlite?.rps).toBeGreaterThan(0)
      expect(readdirSync(LOGS).filter((name) => name.startsWith('sqlite-'))).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60000)
})
