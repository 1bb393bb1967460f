import { defineConfig } from 'vitest/config'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * `npm test` runs the `quick` project: the suites that run in the test process (inject, or the app on a socket of
 * its own), and two checks of the build, `test/e2e/server.test.ts` and `test/storage.test.ts`. The `long` project
 * holds every suite that starts the built service, a command, the client's package or an outside tool (PostgreSQL
 * servers, PgBouncer, HAProxy, Prometheus, Chromium, wrk, Docker, Python, Stryker) as a process, and those that
 * hold real time or load on purpose. CI runs both (`npm test -- --project long`, .ci/run). Naming a file runs it
 * whatever its project.
 */
const LONG = [
  'test/bench/**/*.test.ts',
  'test/client/!(client).test.ts',
  'test/commands/commands.test.ts',
  'test/commands/move-long.test.ts',
  'test/container/**/*.test.ts',
  'test/deploy/prometheus-rules.test.ts',
  'test/docs/{performance-map,performance-postgres,production-postgres,production-tls,readme-recipes,storage-pgbouncer,testing-mutation}.test.ts',
  'test/e2e/!(server).test.ts',
  'test/hardening/{shutdown-delay,shutdown-under-load,slow-clients,token-rotation}.test.ts',
  'test/openapi/{compile-with-jsonschema-rs,lint}.test.ts',
  'test/plants/postgres-tls.test.ts',
  'test/scripts/start.test.ts'
]

/**
 * The files that run longest, longest first: the long project's, then the quick one's. Started before the rest,
 * they run beside it instead of ending the run alone.
 */
const LONGEST = [
  'test/container/image.test.ts',
  'test/e2e/storage-long-faults.test.ts',
  'test/client/package.test.ts',
  'test/commands/commands.test.ts',
  'test/commands/move-long.test.ts',
  'test/e2e/alerts-healthy.test.ts',
  'test/e2e/alerts.test.ts',
  'test/client/restarts.test.ts',
  'test/e2e/rollout-haproxy.test.ts',
  'test/e2e/storage-failover.test.ts',
  'test/client/rate-limit.test.ts',
  'test/e2e/storage-sqlite.test.ts',
  'test/scripts/start.test.ts',
  'test/bench/run.test.ts',
  'test/hardening/token-rotation.test.ts',
  'test/e2e/openapi-client.test.ts',
  'test/client/failover.test.ts',
  'test/e2e/slow-log-reader.test.ts',
  'test/docs/performance-map.test.ts',
  'test/e2e/storage-postgres.test.ts',
  'test/plants/postgres-plant-repository.test.ts',
  'test/hardening/slow-clients.test.ts',
  'test/client/client.test.ts',
  'test/hardening/edge-fuzz.test.ts'
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
      // One module graph per worker instead of one per file: importing Fastify and the app again for each file was
      // most of the quick project's time. Its suites build their apps and stores per test and hold no module state.
      { extends: true, test: { name: 'quick', include: ['test/**/*.test.ts'], exclude: LONG, isolate: false } },
      { extends: true, test: { name: 'long', include: LONG } }
    ]
  }
})
