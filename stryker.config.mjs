// Mutation testing: `npm run mutation` (whole list), `npm run mutation:incremental` (only what changed since the
// last run; its state is reports/stryker-incremental.json, kept out of git with the HTML report).
// One file: `npm run mutation -- --mutate src/errors.ts`. Not part of `npm test`.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts' },
  coverageAnalysis: 'perTest',
  mutate: [
    'src/schemas.ts',
    'src/errors.ts',
    'src/validation.ts',
    'src/plugins/auth.ts',
    'src/plugins/json-body.ts',
    'src/routes/plants.ts',
    'src/plants/plant-service.ts',
    'src/plants/memory-plant-repository.ts',
    'src/config/**/*.ts',
    'src/plugins/http-edge.ts',
    'src/observability/failure-log.ts',
    'src/observability/observed-plant-repository.ts'
  ],
  // The sandbox copies only what the suites need (not node_modules, dist, reports or data).
  ignorePatterns: ['dist', 'reports', 'data', 'bench/results', 'coverage', '.ci'],
  // `// @ts-nocheck` atop the mutated sources only (vitest does not type-check): by default Stryker writes it
  // atop every TypeScript file, openapi/plant-store.d.ts included, which test/openapi/committed.test.ts compares.
  disableTypeChecks: 'src/**/*.ts',
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  incrementalFile: 'reports/stryker-incremental.json',
  // Two cores shared: one runner per core at most; a timed-out mutant counts as detected.
  concurrency: 2,
  timeoutMS: 10000,
  thresholds: { high: 98, low: 95, break: 95 }
}
