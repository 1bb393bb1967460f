import { defineConfig } from 'vitest/config'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * The `long` project: suites that hold real time or real load on purpose (a rate limit's minute, kill -9
 * restarts under clients, faults kept as long as they last in production, alerts over Prometheus's windows,
 * a log reader held at 64 KB/s, the Docker image). `npm test` runs the `quick` project, everything else;
 * CI runs both (`npm test -- --project long`, .ci/run). Naming a file runs it whatever its project.
 */
const LONG = [
  'test/container/image.test.ts',
  'test/e2e/storage-long-faults.test.ts',
  'test/commands/move-long.test.ts',
  'test/e2e/alerts-healthy.test.ts',
  'test/e2e/alerts.test.ts',
  'test/client/restarts.test.ts',
  'test/e2e/rollout-haproxy.test.ts',
  'test/e2e/storage-failover.test.ts',
  'test/client/rate-limit.test.ts',
  'test/client/failover.test.ts',
  'test/e2e/slow-log-reader.test.ts',
  'test/docs/performance-map.test.ts',
  'test/container/**/*.test.ts'
]

/**
 * The files that run for a minute or more, longest first: the long project's, then the quick one's. Started before
 * the rest, they run beside it instead of ending the run alone.
 */
const LONGEST = [
  ...LONG,
  'test/commands/commands.test.ts',
  'test/e2e/storage-postgres.test.ts',
  'test/plants/postgres-plant-repository.test.ts',
  'test/scripts/start.test.ts',
  'test/e2e/storage-sqlite.test.ts',
  'test/hardening/token-rotation.test.ts',
  'test/e2e/openapi-client.test.ts'
]

class LongestFirst extends BaseSequencer {
  override async sort (files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification): number => {
      const index = LONGEST.findIndex((path) => file.moduleId.endsWith(path))
      return index === -1 ? LONGEST.length : index
    }
    // Array.prototype.sort is stable: the rest keeps Vitest's own order.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b))
  }
}

export default defineConfig({
  test: {
    // End-to-end tests start the built server; `npm test` builds first (pretest).
    testTimeout: 20000,
    hookTimeout: 30000,
    reporters: ['default'],
    pool: 'forks',
    // Vitest's default on 2 cores is one file at a time, yet most of the long suites wait on child
    // processes, timers and sockets: three at a time overlap those waits on a 2-core machine.
    maxWorkers: 3,
    sequence: { sequencer: LongestFirst },
    projects: [
      { extends: true, test: { name: 'quick', include: ['test/**/*.test.ts'], exclude: LONG } },
      { extends: true, test: { name: 'long', include: LONG } }
    ]
  }
})
