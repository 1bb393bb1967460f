import { defineConfig } from 'vitest/config'

// The suites StrykerJS counts (`npm run mutation`): the unit-level ones, which import `src/` in-process.
// Left out: suites that run the built server or a child process on `dist/` (end-to-end, container, bench,
// scripts, storage, shutdown (under load, and its delay) and token rotation of the built server), and the PostgreSQL suites (a service).
// test/openapi/committed.test.ts counts: it builds the app in-process, and a documentation string changed in
// src/ (a schema's description, a route's summary) changes the served document, which must equal openapi/openapi.json.
export default defineConfig({
  test: {
    include: [
      'test/*.test.ts',
      'test/config/**/*.test.ts',
      'test/hardening/**/*.test.ts',
      'test/lib/**/*.test.ts',
      'test/openapi/**/*.test.ts',
      'test/observability/**/*.test.ts',
      'test/plants/**/*.test.ts',
      'test/plugins/**/*.test.ts',
      'test/routes/**/*.test.ts'
    ],
    exclude: [
      'test/storage.test.ts',
      'test/hardening/shutdown-under-load.test.ts',
      'test/hardening/shutdown-delay.test.ts',
      'test/hardening/token-rotation.test.ts',
      'test/openapi/lint.test.ts',
      'test/openapi/compile-with-jsonschema-rs.test.ts',
      'test/plants/postgres-*.test.ts'
    ],
    testTimeout: 20000,
    hookTimeout: 30000,
    pool: 'forks'
  }
})
